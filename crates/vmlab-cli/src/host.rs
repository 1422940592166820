//! The host a `vmlab bench` ran on: the simulator's speed depends on it (no simulated result
//! does), so a speed figure is only comparable with others from the same CPU. Read from
//! CPUID, which under a hypervisor is what the VM is shown (as `lscpu` prints it).

mod round_trip;
pub use round_trip::thread_round_trip;

/// The host's CPU and how many of them this process may use.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Host {
    /// The brand string (`AMD EPYC`, `Intel(R) Xeon(R) ...`), if the CPU has one.
    pub cpu: Option<String>,
    /// The vendor (`AuthenticAMD`, `GenuineIntel`).
    pub vendor: Option<String>,
    /// The family, as the vendor numbers it (the extended family included).
    pub family: Option<u8>,
    /// The model within the family (the extended model included where the vendor uses it).
    pub model: Option<u8>,
    /// The stepping.
    pub stepping: Option<u8>,
    /// CPUs this process may run on (the memory pipeline's second thread wants two).
    pub cpus: usize,
}

impl Host {
    /// The host this process runs on.
    pub fn this() -> Host {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        #[cfg(target_arch = "x86_64")]
        {
            let cpuid = raw_cpuid::CpuId::new();
            let features = cpuid.get_feature_info();
            Host {
                cpu: cpuid
                    .get_processor_brand_string()
                    .map(|b| b.as_str().trim().to_string())
                    .filter(|b| !b.is_empty()),
                vendor: cpuid.get_vendor_info().map(|v| v.as_str().to_string()),
                family: features.as_ref().map(|f| f.family_id()),
                model: features.as_ref().map(|f| f.model_id()),
                stepping: features.as_ref().map(|f| f.stepping_id()),
                cpus,
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        Host {
            cpu: None,
            vendor: None,
            family: None,
            model: None,
            stepping: None,
            cpus,
        }
    }

    /// One line for people: `AMD EPYC (AuthenticAMD family 23, model 1), 2 CPUs`.
    pub fn describe(&self) -> String {
        let cpu = self.cpu.as_deref().unwrap_or("unknown CPU");
        let cpus = match self.cpus {
            1 => "1 CPU".to_string(),
            n => format!("{n} CPUs"),
        };
        match (&self.vendor, self.family, self.model) {
            (Some(vendor), Some(family), Some(model)) => {
                format!("{cpu} ({vendor} family {family}, model {model}), {cpus}")
            }
            _ => format!("{cpu}, {cpus}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(cpus: usize) -> Host {
        Host {
            cpu: Some("AMD EPYC".into()),
            vendor: Some("AuthenticAMD".into()),
            family: Some(23),
            model: Some(1),
            stepping: Some(2),
            cpus,
        }
    }

    #[test]
    fn the_line_names_the_cpu_its_family_and_model_and_the_cpu_count() {
        assert_eq!(
            host(2).describe(),
            "AMD EPYC (AuthenticAMD family 23, model 1), 2 CPUs"
        );
        assert_eq!(
            Host {
                vendor: None,
                ..host(1)
            }
            .describe(),
            "AMD EPYC, 1 CPU"
        );
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn an_x86_host_has_a_vendor_and_a_family() {
        let this = Host::this();
        assert!(this.cpus >= 1);
        assert!(
            this.vendor.as_deref().is_some_and(|v| !v.is_empty()),
            "{this:?}"
        );
        assert!(this.family.is_some_and(|f| f > 0), "{this:?}");
    }
}
