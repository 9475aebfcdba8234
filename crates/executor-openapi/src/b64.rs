//! Base64 as the crate reads and writes it: standard alphabet with padding out; in, also the
//! URL-safe alphabet, missing padding and ASCII whitespace (what people and tools paste).

use base64::Engine as _;
use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};

const LENIENT: GeneralPurposeConfig =
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent);
const STANDARD: GeneralPurpose = GeneralPurpose::new(&alphabet::STANDARD, LENIENT);
const URL_SAFE: GeneralPurpose = GeneralPurpose::new(&alphabet::URL_SAFE, LENIENT);

pub(crate) fn encode(input: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(input)
}

pub(crate) fn decode(input: &str) -> Option<Vec<u8>> {
    let compact: std::borrow::Cow<'_, str> = if input.bytes().any(|b| b.is_ascii_whitespace()) {
        input
            .chars()
            .filter(|c| !c.is_ascii_whitespace())
            .collect::<String>()
            .into()
    } else {
        input.into()
    };
    STANDARD
        .decode(compact.as_bytes())
        .or_else(|_| URL_SAFE.decode(compact.as_bytes()))
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        for s in ["", "f", "fo", "foo", "foob", "fooba", "foobar", "user:pass"] {
            let e = encode(s.as_bytes());
            assert_eq!(decode(&e).unwrap(), s.as_bytes(), "{s}");
        }
        assert_eq!(encode(b"foobar"), "Zm9vYmFy");
        assert_eq!(encode(b"fo"), "Zm8=");
        assert_eq!(decode("Zm8").unwrap(), b"fo");
        assert_eq!(decode("Zm9v\nYmFy").unwrap(), b"foobar");
        assert_eq!(decode("-_8=").unwrap(), [0xfb, 0xff]);
        assert!(decode("Zm8$").is_none());
        assert!(decode("Z").is_none());
    }
}
