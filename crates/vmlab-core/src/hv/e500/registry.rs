//! The e500 hypervisor models by name: what `vmlab reproduce labt` and the translation
//! invariant test iterate over. Adding a model is one entry in [`MODELS`].

use super::kvm::HostConfig;
use super::model::HvModel;

/// Builds a model for a host (models count; the profile prices their counts afterwards).
pub type BuildFn = fn(&HostConfig) -> Box<dyn HvModel>;

/// One registered model configuration.
pub struct ModelSpec {
    /// The configuration's name, as in reports.
    pub name: &'static str,
    /// One line: what it is.
    pub summary: &'static str,
    /// Its constructor.
    pub build: BuildFn,
}

/// Every e500 model configuration, in report order.
pub const MODELS: &[ModelSpec] = &[
    ModelSpec {
        name: "bare",
        summary: "the guest kernel on the hardware, no hypervisor (the baseline)",
        build: |_| Box::new(super::bare::Bare::new()),
    },
    ModelSpec {
        name: "kvm",
        summary: "KVM/e500 trap-and-emulate, guest memory in 4 KiB host pages (TLB0 shadows)",
        build: |c| Box::new(super::kvm::Kvm::new(c, false)),
    },
    ModelSpec {
        name: "kvm-huge",
        summary: "KVM/e500 trap-and-emulate, guest memory in huge host pages (TLB1 shadows)",
        build: |c| Box::new(super::kvm::Kvm::new(c, true)),
    },
    // Helper models (pv, labt variants) are registered below this line.
    ModelSpec {
        name: "pv",
        summary: "Linux's boot-time paravirtual patching (kvm.c) on kvm, 4 KiB host pages",
        build: |c| Box::new(super::pv::Pv::new(c, false)),
    },
    ModelSpec {
        name: "pv-huge",
        summary: "Linux's boot-time paravirtual patching (kvm.c) on kvm-huge",
        build: |c| Box::new(super::pv::Pv::new(c, true)),
    },
    ModelSpec {
        name: "labt",
        summary: "LABT on kvm-huge: in-place translation with read/write tracing",
        build: |c| Box::new(super::labt::Labt::new(c, super::labt::Variant::Tracing)),
    },
    ModelSpec {
        name: "labt-resize",
        summary: "LABT + adaptive shadow-TLB resizing (256 KiB execute-only unit)",
        build: |c| Box::new(super::labt::Labt::new(c, super::labt::Variant::Resize)),
    },
    ModelSpec {
        name: "labt-avoid",
        summary: "LABT + avoiding read faults (hot loads read a copy on the shared page)",
        build: |c| Box::new(super::labt::Labt::new(c, super::labt::Variant::AvoidReads)),
    },
    ModelSpec {
        name: "labt-all",
        summary: "LABT + adaptive resizing + avoiding read faults",
        build: |c| Box::new(super::labt::Labt::new(c, super::labt::Variant::All)),
    },
];

/// The model called `name`.
pub fn find(name: &str) -> Option<&'static ModelSpec> {
    MODELS.iter().find(|m| m.name == name)
}

/// The registered names, comma-separated (for error messages).
pub fn names() -> String {
    MODELS.iter().map(|m| m.name).collect::<Vec<_>>().join(", ")
}
