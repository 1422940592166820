//! Closed sets of named keys, declared once, and exact counts per key.
//!
//! Exit reasons, units of hypervisor work and kernel operations each have a name used in
//! reports, JSON and as the key of their cost in a profile. [`named_enum!`](crate::named_enum) declares such a
//! set from one list of `doc, Variant => "name"` entries; [`Counters`] counts events per key.
//! Adding a key is one line in its list (plus its cost in every profile, where it has one).

use std::fmt;
use std::marker::PhantomData;

/// A key of a closed, named set (an enum declared with [`named_enum!`](crate::named_enum)).
pub trait NamedKey: Copy + Eq + fmt::Debug + 'static {
    /// Every key, in declaration order; `all()[k.index()] == k`.
    fn all() -> &'static [Self];
    /// Position in [`NamedKey::all`].
    fn index(self) -> usize;
    /// The name in reports, JSON and profile files.
    fn name(self) -> &'static str;
    /// What the key means: its documentation, as one line.
    fn doc(self) -> &'static str;
    /// The key called `name`, if there is one.
    fn from_name(name: &str) -> Option<Self> {
        Self::all().iter().copied().find(|k| k.name() == name)
    }
}

/// Declares an enum of named keys from one list of `doc, Variant => "name"` entries: the
/// enum, its `COUNT` and `ALL`, inherent `name()`, `doc()` and `from_name()`, and
/// [`NamedKey`](crate::stats::named::NamedKey).
#[macro_export]
macro_rules! named_enum {
    (
        $(#[doc = $tdoc:literal])+
        $vis:vis enum $Name:ident {
            $( $(#[doc = $doc:literal])+ $variant:ident => $name:literal, )+
        }
    ) => {
        $(#[doc = $tdoc])+
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        $vis enum $Name {
            $( $(#[doc = $doc])+ $variant, )+
        }

        impl $Name {
            /// How many keys there are.
            pub const COUNT: usize = [$($name),+].len();

            /// Every key, in declaration order; `ALL[k as usize] == k`.
            pub const ALL: [$Name; Self::COUNT] = [$($Name::$variant),+];

            /// The name in reports, JSON and profile files.
            pub fn name(self) -> &'static str {
                match self {
                    $( $Name::$variant => $name, )+
                }
            }

            /// What the key means: its documentation, as one line.
            pub fn doc(self) -> &'static str {
                match self {
                    $( $Name::$variant => concat!($($doc),+).trim_start(), )+
                }
            }

            /// The key called `name`, if there is one.
            pub fn from_name(name: &str) -> Option<Self> {
                Self::ALL.into_iter().find(|k| k.name() == name)
            }
        }

        impl $crate::stats::named::NamedKey for $Name {
            fn all() -> &'static [Self] {
                &Self::ALL
            }
            fn index(self) -> usize {
                self as usize
            }
            fn name(self) -> &'static str {
                $Name::name(self)
            }
            fn doc(self) -> &'static str {
                $Name::doc(self)
            }
        }
    };
}

/// Exact counts, one per key of `K` (`N` is `K::COUNT`: name the type through an alias such
/// as `type ExitCounters = Counters<ExitReason, { ExitReason::COUNT }>`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Counters<K, const N: usize> {
    counts: [u64; N],
    key: PhantomData<K>,
}

impl<K: NamedKey, const N: usize> Default for Counters<K, N> {
    fn default() -> Self {
        debug_assert_eq!(K::all().len(), N, "Counters' N must be the key's COUNT");
        Counters {
            counts: [0; N],
            key: PhantomData,
        }
    }
}

impl<K: NamedKey, const N: usize> Counters<K, N> {
    /// Counts `n` events of `key`.
    pub fn add(&mut self, key: K, n: u64) {
        self.counts[key.index()] += n;
    }

    /// Counts one event of `key`.
    pub fn record(&mut self, key: K) {
        self.add(key, 1);
    }

    /// Events of `key` so far.
    pub fn get(&self, key: K) -> u64 {
        self.counts[key.index()]
    }

    /// Events of every key.
    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// `(key, count)` for every key, in declaration order.
    pub fn iter(&self) -> impl Iterator<Item = (K, u64)> + '_ {
        K::all().iter().map(|&k| (k, self.get(k)))
    }

    /// `(name, count)` for every key with a nonzero count.
    pub fn nonzero(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        self.iter()
            .filter(|&(_, n)| n > 0)
            .map(|(k, n)| (k.name(), n))
    }

    /// The counts of the interval since `earlier` (a snapshot of the same counters).
    pub fn since(&self, earlier: &Self) -> Self {
        let mut out = *self;
        for (o, e) in out.counts.iter_mut().zip(earlier.counts) {
            *o -= e;
        }
        out
    }

    /// Adds `other`'s counts to these.
    pub fn add_all(&mut self, other: &Self) {
        for (o, e) in self.counts.iter_mut().zip(other.counts) {
            *o += e;
        }
    }

    /// Counts from `(name, count)` pairs (a report's nonzero counts); `Err` names a key
    /// that is not one of `K`'s.
    pub fn from_names<'a>(pairs: impl IntoIterator<Item = (&'a str, u64)>) -> Result<Self, String> {
        let mut out = Self::default();
        for (name, n) in pairs {
            let key = K::from_name(name).ok_or_else(|| format!("unknown key '{name}'"))?;
            out.add(key, n);
        }
        Ok(out)
    }
}

impl<K: NamedKey, const N: usize> fmt::Debug for Counters<K, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.nonzero()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    crate::named_enum! {
        /// A test set.
        enum Fruit {
            /// An apple.
            Apple => "apple",
            /// A pear, one of
            /// two lines.
            Pear => "pear",
        }
    }

    type FruitCounts = Counters<Fruit, { Fruit::COUNT }>;

    #[test]
    fn keys_are_named_once_and_counted_exactly() {
        assert_eq!(Fruit::ALL, [Fruit::Apple, Fruit::Pear]);
        assert!(Fruit::ALL.iter().enumerate().all(|(i, &k)| k as usize == i));
        assert_eq!(Fruit::from_name("pear"), Some(Fruit::Pear));
        assert_eq!(Fruit::from_name("plum"), None);
        assert_eq!(Fruit::Pear.doc(), "A pear, one of two lines.");
        assert_eq!(<Fruit as NamedKey>::all().len(), Fruit::COUNT);

        let mut c = FruitCounts::default();
        c.record(Fruit::Apple);
        let snapshot = c;
        c.add(Fruit::Pear, 3);
        c.record(Fruit::Apple);
        assert_eq!(
            (c.get(Fruit::Apple), c.get(Fruit::Pear), c.total()),
            (2, 3, 5)
        );
        let iv = c.since(&snapshot);
        assert_eq!(
            iv.nonzero().collect::<Vec<_>>(),
            [("apple", 1), ("pear", 3)]
        );
        let mut sum = snapshot;
        sum.add_all(&iv);
        assert_eq!(sum, c);
        assert_eq!(FruitCounts::from_names(c.nonzero()), Ok(c));
        assert!(FruitCounts::from_names([("plum", 1)]).is_err());
        assert_eq!(format!("{c:?}"), r#"{"apple": 2, "pear": 3}"#);
    }
}
