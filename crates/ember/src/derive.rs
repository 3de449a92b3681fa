//! Hand-rolled derives for public types: names for the enums a user picks
//! on the command line and reads in the stats (one spelling each, printed
//! by `Display`, parsed by `FromStr`, which also takes `-` for `_`), and
//! setters for the `#[non_exhaustive]` option structs.

/// Implements `ALL`, `name`, `Display` and `FromStr` for a fieldless enum
/// from what it is called in errors and a list of `Variant => "name"`.
macro_rules! names {
    ($t:ty, $what:literal { $($v:ident => $s:literal),* $(,)? }) => {
        impl $t {
            /// Every value, in declaration order.
            pub const ALL: &'static [$t] = &[$(<$t>::$v),*];

            /// The name the CLI and the stats use.
            pub fn name(self) -> &'static str {
                match self { $(<$t>::$v => $s),* }
            }
        }
        impl ::std::fmt::Display for $t {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.name())
            }
        }
        impl std::str::FromStr for $t {
            type Err = $crate::error::Error;
            fn from_str(s: &str) -> $crate::error::Result<Self> {
                let s = s.replace('-', "_");
                <$t>::ALL.iter().copied().find(|v| v.name() == s).ok_or_else(|| {
                    let all: Vec<&str> = <$t>::ALL.iter().map(|v| v.name()).collect();
                    $crate::error::Error::Config(format!(
                        "unknown {} '{s}' (one of: {})",
                        $what,
                        all.join(", ")
                    ))
                })
            }
        }
    };
}
pub(crate) use names;

/// Setters that take a value or an `Option` of it (`None` restores the
/// default), one per optional field.
macro_rules! setters {
    ($t:ty { $($field:ident: $v:ty),* $(,)? }) => {
        impl $t {
            $(
                #[doc = concat!("Sets [`", stringify!($t), "::", stringify!($field), "`].")]
                pub fn $field(mut self, value: impl Into<Option<$v>>) -> Self {
                    self.$field = value.into();
                    self
                }
            )*
        }
    };
}
pub(crate) use setters;
