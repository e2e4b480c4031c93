//! Stored values: one format byte, then MessagePack with named fields. Named fields let a record gain
//! fields (`#[serde(default)]`) or drop them with no migration; the byte is there for a real change.

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::StoreError;

const FORMAT_V1: u8 = 1;

pub fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>, StoreError> {
    let mut out = vec![FORMAT_V1];
    rmp_serde::encode::write_named(&mut out, value).map_err(|e| StoreError::Codec(e.to_string()))?;
    Ok(out)
}

pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, StoreError> {
    match bytes.split_first() {
        Some((&FORMAT_V1, rest)) => rmp_serde::from_slice(rest).map_err(|e| StoreError::Codec(e.to_string())),
        Some((v, _)) => Err(StoreError::Codec(format!("unknown record format {v}"))),
        None => Err(StoreError::Codec("empty record".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde::Deserialize;

    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    struct V1 {
        id: u64,
        name: String,
    }

    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    struct V2 {
        id: u64,
        name: String,
        #[serde(default)]
        tags: Vec<String>,
    }

    #[test]
    fn records_gain_and_drop_fields_without_migration() {
        let old = encode(&V1 { id: 1, name: "a".into() }).unwrap();
        let new: V2 = decode(&old).unwrap();
        assert_eq!(new, V2 { id: 1, name: "a".into(), tags: vec![] });
        let back: V1 = decode(&encode(&V2 { id: 2, name: "b".into(), tags: vec!["x".into()] }).unwrap()).unwrap();
        assert_eq!(back, V1 { id: 2, name: "b".into() });
    }

    #[test]
    fn bad_bytes_are_errors_not_panics() {
        assert!(decode::<V1>(&[]).is_err());
        assert!(decode::<V1>(&[9, 1, 2]).is_err());
        assert!(decode::<V1>(&[FORMAT_V1, 0xc1]).is_err());
    }

    proptest! {
        #[test]
        fn round_trip(id in any::<u64>(), name in ".*", tags in proptest::collection::vec(".*", 0..5)) {
            let v = V2 { id, name, tags };
            prop_assert_eq!(decode::<V2>(&encode(&v).unwrap()).unwrap(), v);
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = decode::<V2>(&bytes);
        }
    }
}
