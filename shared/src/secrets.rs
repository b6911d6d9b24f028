//! Secrets the service must use again later (sign-in providers' client
//! secrets, SMTP passwords, webhook signing keys): sealed with AES-256-GCM
//! under a key derived from JWT_SECRET, never stored or shown in clear.
use ring::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use sha2::{Digest, Sha256};

use crate::AppError;

/// Why a secret could not be sealed or opened: said in the worker's log
/// and the job's error as it is, and an API's 500 problem (`AppError`).
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    #[error("a secret could not be encrypted")]
    Seal,
    #[error("a stored secret cannot be decrypted (was JWT_SECRET changed?); enter it again")]
    Unreadable,
    #[error("a sealed secret's text is not hex")]
    NotHex,
}

impl From<SecretError> for AppError {
    fn from(e: SecretError) -> Self {
        AppError::internal(e.to_string())
    }
}

fn cipher(jwt_secret: &str) -> LessSafeKey {
    // The label predates the other kinds of secret; changing it would
    // make every stored secret unreadable.
    let key = Sha256::digest(format!("provider-secrets:{jwt_secret}").as_bytes());
    LessSafeKey::new(UnboundKey::new(&AES_256_GCM, &key).expect("a 32-byte AES-256 key"))
}

/// The secret sealed as nonce ‖ ciphertext ‖ tag.
pub fn seal(jwt_secret: &str, secret: &str) -> Result<Vec<u8>, SecretError> {
    let mut nonce = [0u8; NONCE_LEN];
    rand::RngCore::fill_bytes(&mut rand::rng(), &mut nonce);
    let mut sealed = secret.as_bytes().to_vec();
    cipher(jwt_secret)
        .seal_in_place_append_tag(Nonce::assume_unique_for_key(nonce), Aad::empty(), &mut sealed)
        .map_err(|_| SecretError::Seal)?;
    Ok([nonce.as_slice(), &sealed].concat())
}

pub fn unseal(jwt_secret: &str, sealed: &[u8]) -> Result<String, SecretError> {
    let unreadable = || SecretError::Unreadable;
    if sealed.len() < NONCE_LEN {
        return Err(unreadable());
    }
    let (nonce, ciphertext) = sealed.split_at(NONCE_LEN);
    let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| unreadable())?;
    let mut buffer = ciphertext.to_vec();
    let plain = cipher(jwt_secret)
        .open_in_place(nonce, Aad::empty(), &mut buffer)
        .map_err(|_| unreadable())?;
    String::from_utf8(plain.to_vec()).map_err(|_| unreadable())
}

/// The secret sealed, as hex text (for JSON documents such as job payloads).
pub fn seal_hex(jwt_secret: &str, secret: &str) -> Result<String, SecretError> {
    Ok(seal(jwt_secret, secret)?.iter().map(|b| format!("{b:02x}")).collect())
}

/// The secret of `seal_hex`'s text.
pub fn unseal_hex(jwt_secret: &str, hex: &str) -> Result<String, SecretError> {
    let bytes: Option<Vec<u8>> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect();
    unseal(jwt_secret, &bytes.ok_or(SecretError::NotHex)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_seal_and_open_only_under_the_same_key() {
        let sealed = seal("a-secret-of-at-least-32-characters!!", "client-secret").unwrap();
        assert!(!sealed.windows(6).any(|w| w == b"client"));
        assert_eq!(
            unseal("a-secret-of-at-least-32-characters!!", &sealed).unwrap(),
            "client-secret"
        );
        assert!(unseal("another-secret-of-32-characters-long!", &sealed).is_err());
        let hex = seal_hex("a-secret-of-at-least-32-characters!!", "token").unwrap();
        assert_eq!(
            unseal_hex("a-secret-of-at-least-32-characters!!", &hex).unwrap(),
            "token"
        );
    }
}
