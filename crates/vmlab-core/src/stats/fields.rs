//! Structs of named exact counts, declared once: [`count_struct!`](crate::count_struct)
//! writes the struct and its field-by-field arithmetic (`since`, `plus`) from one field
//! list, so a counter added to the struct cannot be forgotten in the arithmetic.

/// Declares a struct of `u64` counts and, from the same list, `since` (the counts accumulated
/// since an earlier snapshot) and `plus` (two sets of counts together). Fields listed after
/// `gauges:` hold current values, not counts: `since` and `plus` keep the newer value
/// (`self`'s, `other`'s). Attributes (documentation, serde) go on the struct and the fields
/// as usual; every field is `pub` (the counts are the struct's interface).
#[macro_export]
macro_rules! count_struct {
    (
        $(#[$meta:meta])*
        $vis:vis struct $Name:ident {
            $( $(#[$fmeta:meta])* pub $field:ident : u64, )+
            $( gauges: $( $(#[$gmeta:meta])* pub $gauge:ident : u64, )+ )?
        }
    ) => {
        $(#[$meta])*
        $vis struct $Name {
            $( $(#[$fmeta])* pub $field: u64, )+
            $( $( $(#[$gmeta])* pub $gauge: u64, )+ )?
        }

        impl $Name {
            /// The counts accumulated since `earlier`, a snapshot of these counters taken
            /// before (gauges keep their current value).
            pub fn since(&self, earlier: &Self) -> Self {
                Self {
                    $( $field: self.$field - earlier.$field, )+
                    $( $( $gauge: self.$gauge, )+ )?
                }
            }

            /// These counts and `other`'s together (gauges take `other`'s value, the later
            /// one).
            pub fn plus(&self, other: &Self) -> Self {
                Self {
                    $( $field: self.$field + other.$field, )+
                    $( $( $gauge: other.$gauge, )+ )?
                }
            }
        }
    };
}

#[cfg(test)]
mod tests {
    crate::count_struct! {
        /// Two counts and a gauge.
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub struct Sample {
            /// A count.
            pub a: u64,
            /// Another.
            pub b: u64,
            gauges:
            /// A current value.
            pub level: u64,
        }
    }

    #[test]
    fn since_and_plus_go_field_by_field_and_keep_gauges_current() {
        let early = Sample {
            a: 3,
            b: 10,
            level: 7,
        };
        let late = Sample {
            a: 5,
            b: 14,
            level: 2,
        };
        let d = late.since(&early);
        assert_eq!(
            d,
            Sample {
                a: 2,
                b: 4,
                level: 2
            }
        );
        assert_eq!(
            early.plus(&d),
            Sample {
                a: 5,
                b: 14,
                level: 2
            }
        );
    }
}
