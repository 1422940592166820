//! The one list of x86 paging schemes. Each line names a [`Paging`] variant, the type that
//! implements it ([`Scheme`]), its name on the command line and its one-line summary; the
//! enum, its names, `Paging::ALL`, the [`AnyScheme`] that holds a built scheme and the
//! dispatch over it are generated from this list, and what the rest of the tree asks of a
//! scheme (`Paging::traits`) comes from the scheme's own [`Scheme::traits`]. Adding a scheme
//! is its module plus one line here.

use super::{Machine, Scheme, SimError, SystemConfig};

/// Generates `Paging`, `AnyScheme` and the `dispatch!` macro from the scheme list. `$d` is a
/// literal `$`, so the generated macro can declare its own metavariables.
macro_rules! schemes {
    ($d:tt $(
        $(#[doc = $doc:literal])*
        $variant:ident => $ty:ty, $name:literal, $summary:literal;
    )*) => {
        /// How guest-virtual addresses become host-physical ones.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Paging {
            $( $(#[doc = $doc])* $variant, )*
        }

        impl Paging {
            /// Every scheme, in the order `vmlab list` and `vmlab bench` use.
            pub const ALL: [Paging; [$( $name ),*].len()] = [$( Paging::$variant ),*];

            /// The scheme's name on the command line and in reports (`--paging`).
            pub fn name(self) -> &'static str {
                match self {
                    $( Paging::$variant => $name, )*
                }
            }

            /// One line on how the scheme translates, for `--help` and listings.
            pub fn summary(self) -> &'static str {
                match self {
                    $( Paging::$variant => $summary, )*
                }
            }

            /// What the scheme is and can run, decided by its own module.
            pub fn traits(self) -> super::SchemeTraits {
                match self {
                    $( Paging::$variant => <$ty as Scheme>::traits(self), )*
                }
            }
        }

        /// Every scheme, built: the system holds one and dispatches on it outside the hot
        /// path. One value per system, never moved on the hot path: the size difference does
        /// not matter.
        #[allow(clippy::large_enum_variant)]
        pub enum AnyScheme {
            $( $(#[doc = $doc])* $variant($ty), )*
        }

        /// `$body` with `$s` bound to the scheme inside `$any`.
        macro_rules! dispatch {
            ($d any:expr, $d s:ident => $d body:expr) => {
                match $d any {
                    $( $crate::scheme::AnyScheme::$variant($d s) => $d body, )*
                }
            };
        }
        pub(crate) use dispatch;

        impl AnyScheme {
            /// The scheme `config.paging` names, built on `machine`.
            pub fn new(machine: &mut Machine, config: &SystemConfig) -> Result<AnyScheme, SimError> {
                Ok(match config.paging {
                    $( Paging::$variant => AnyScheme::$variant(<$ty as Scheme>::new(machine, config)?), )*
                })
            }
        }
    };
}

schemes! { $
    /// No hypervisor: the OS's tables map VA->PA, a 1D walk.
    Native => super::native::Native, "native",
        "bare metal: the OS's tables, 1D walks (up to 4 references)";
    /// Hardware nested paging (Intel EPT / AMD NPT): a 2D walk.
    Nested => super::nested::Nested, "nested",
        "EPT/NPT: guest tables + host EPT, 2D walks (up to 24 references)";
    /// KVM-style shadow paging: the hypervisor's shadow tables, 1D walks; guest page-table
    /// writes, CR3 loads and flushes trap.
    Shadow => super::shadow::Shadow, "shadow",
        "KVM shadow MMU: 1D walks of shadow tables; guest table writes, CR3 loads, INVLPG trap";
    /// Agile paging: shadow tables above a switch, the guest's own tables through the EPT
    /// below it, for the parts the guest writes often.
    Agile => super::agile::Agile, "agile",
        "agile paging: shadow walks above a switch, nested below it where the guest writes its tables often";
    /// Xen-style paravirtual direct paging: guest tables hold machine frames (1D walks);
    /// every update is a validated hypercall, batched in lazy-MMU sections; CR3 loads and
    /// flushes are hypercalls; system calls and faults bounce through the hypervisor.
    Pv => super::pv::Pv, "pv",
        "Xen PV direct paging: 1D walks of machine-frame tables; updates are batched hypercalls";
    /// Translation Pass-Through: the workload's process walks guest-built GVA->HPA tables
    /// (1D) checked by memory tags; everything else runs on nested paging.
    Tpt => super::tpt::Tpt, "tpt",
        "Translation Pass-Through: guest-built GVA->HPA tables, 1D walks with memory-tag checks";
    /// The TPT artifact's Intel prototype: the same tables, walked without tag checks (no
    /// tagging hardware), and about 3 exits per user<->kernel round trip of a TPT process.
    TptPrototype => super::tpt::Tpt, "tpt-prototype",
        "TPT's Intel prototype: 1D walks without tags, ~3 exits per kernel entry of a TPT process";
}
