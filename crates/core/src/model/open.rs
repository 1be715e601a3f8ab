//! Enums of the names a stored field may hold, open at one end.
//!
//! A pause kind, a completion action or a role is one of a few names this build acts on,
//! but the files that hold it outlive the build: a session written by a newer version may
//! name a pause kind this one has never heard of, and a repository's `pipelines.toml` may
//! define roles of its own. [`open_enum!`] makes an enum of the known names plus
//! `Other(String)`, which keeps any other name exactly as it was read. The enum is stored as
//! the bare name (the same bytes a `String` field wrote), so reading a file and writing it
//! back changes nothing, whatever it held.

/// Defines `enum $name { Known…, Other(String) }` with its name (`as_str`, `Display`), the
/// conversion from a name (`From<&str>`, `From<String>`: a known name gives its variant,
/// anything else `Other`), and serde as that name.
///
/// Build values from names with `From`, never `Other("…")` with a known name: `Other` holds
/// only names that no variant has, so that comparing two values compares their names.
macro_rules! open_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $text:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        $vis enum $name {
            $( $(#[$vmeta])* $variant, )+
            /// A name this build does not know (written by a newer version, or defined by
            /// the user), kept as it was read so that writing it back changes nothing.
            Other(String),
        }

        impl $name {
            /// Every value this build knows, in declaration order.
            $vis const KNOWN: &'static [$name] = &[$($name::$variant),+];

            /// The name used in files, trailers and output.
            $vis fn as_str(&self) -> &str {
                match self {
                    $( $name::$variant => $text, )+
                    $name::Other(name) => name,
                }
            }

            /// The names this build knows, in declaration order.
            $vis fn known_names() -> Vec<&'static str> {
                vec![$($text),+]
            }
        }

        impl From<&str> for $name {
            fn from(name: &str) -> $name {
                match name {
                    $( $text => $name::$variant, )+
                    other => $name::Other(other.to_owned()),
                }
            }
        }

        impl From<String> for $name {
            fn from(name: String) -> $name {
                match $name::from(name.as_str()) {
                    $name::Other(_) => $name::Other(name),
                    known => known,
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<$name, D::Error> {
                String::deserialize(d).map($name::from)
            }
        }
    };
}

pub(crate) use open_enum;

#[cfg(test)]
mod tests {
    open_enum! {
        /// A test set.
        pub(super) enum Colour {
            /// Red.
            Red = "red",
            /// Light blue.
            LightBlue = "light-blue",
        }
    }

    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Holder {
        colour: Colour,
    }

    #[test]
    fn known_names_read_as_their_variant_and_others_as_other() {
        assert_eq!(Colour::from("red"), Colour::Red);
        assert_eq!(Colour::from("light-blue".to_owned()), Colour::LightBlue);
        assert_eq!(Colour::from("Red"), Colour::Other("Red".into()));
        assert_eq!(Colour::KNOWN, [Colour::Red, Colour::LightBlue]);
        assert_eq!(Colour::known_names(), ["red", "light-blue"]);
        for c in Colour::KNOWN {
            assert_eq!(&Colour::from(c.as_str()), c);
        }
    }

    #[test]
    fn any_name_survives_a_round_trip_byte_for_byte() {
        for text in ["colour = \"light-blue\"\n", "colour = \"ultraviolet\"\n"] {
            let read: Holder = toml::from_str(text).unwrap();
            assert_eq!(toml::to_string(&read).unwrap(), text);
        }
        let read: Holder = toml::from_str("colour = \"ultraviolet\"").unwrap();
        assert_eq!(read.colour, Colour::Other("ultraviolet".into()));
        assert_eq!(read.colour.to_string(), "ultraviolet");
        assert_eq!(
            serde_json::to_string(&read).unwrap(),
            r#"{"colour":"ultraviolet"}"#
        );
    }
}
