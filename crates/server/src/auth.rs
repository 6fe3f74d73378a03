//! Password authentication: SCRAM-SHA-256 (RFC 5802 / RFC 7677) as PostgreSQL does it, with
//! verifiers in PostgreSQL's format `SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>`
//! so that the server never keeps a password.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

type HmacSha256 = Hmac<Sha256>;

/// Iterations of a new verifier (PostgreSQL's default).
pub const ITERATIONS: u32 = 4096;

/// What the server keeps of a password.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verifier {
    pub iterations: u32,
    pub salt: Vec<u8>,
    pub stored_key: [u8; 32],
    pub server_key: [u8; 32],
}

fn hmac(key: &[u8], data: &[u8]) -> [u8; 32] {
    let mut mac = HmacSha256::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(data);
    mac.finalize().into_bytes().into()
}

/// PBKDF2-HMAC-SHA-256 with one output block (SCRAM's Hi()).
fn hi(password: &[u8], salt: &[u8], iterations: u32) -> [u8; 32] {
    let mut first = salt.to_vec();
    first.extend_from_slice(&1u32.to_be_bytes());
    let mut u = hmac(password, &first);
    let mut out = u;
    for _ in 1..iterations {
        u = hmac(password, &u);
        for (o, x) in out.iter_mut().zip(u) {
            *o ^= x;
        }
    }
    out
}

impl Verifier {
    /// A verifier for `password` with a fresh random salt.
    pub fn new(password: &str) -> Verifier {
        let salt: [u8; 16] = rand::random();
        Verifier::with_salt(password, &salt, ITERATIONS)
    }

    pub fn with_salt(password: &str, salt: &[u8], iterations: u32) -> Verifier {
        // SASLprep is not applied: ASCII passwords are unchanged by it, and PostgreSQL also
        // uses the raw bytes when a password is not valid UTF-8 for SASLprep.
        let salted = hi(password.as_bytes(), salt, iterations);
        let client_key = hmac(&salted, b"Client Key");
        Verifier {
            iterations,
            salt: salt.to_vec(),
            stored_key: Sha256::digest(client_key).into(),
            server_key: hmac(&salted, b"Server Key"),
        }
    }

    /// PostgreSQL's text form.
    pub fn encode(&self) -> String {
        format!(
            "SCRAM-SHA-256${}:{}${}:{}",
            self.iterations,
            B64.encode(&self.salt),
            B64.encode(self.stored_key),
            B64.encode(self.server_key)
        )
    }

    pub fn decode(text: &str) -> Option<Verifier> {
        let rest = text.strip_prefix("SCRAM-SHA-256$")?;
        let (params, keys) = rest.split_once('$')?;
        let (iterations, salt) = params.split_once(':')?;
        let (stored, server) = keys.split_once(':')?;
        Some(Verifier {
            iterations: iterations.parse().ok().filter(|&n| n > 0)?,
            salt: B64.decode(salt).ok()?,
            stored_key: B64.decode(stored).ok()?.try_into().ok()?,
            server_key: B64.decode(server).ok()?.try_into().ok()?,
        })
    }
}

/// Why an exchange failed: a malformed message (protocol violation) or a wrong password.
#[derive(Debug, PartialEq, Eq)]
pub enum ScramError {
    Malformed(String),
    WrongPassword,
}

/// The server's side of one SCRAM exchange.
pub struct Exchange {
    verifier: Verifier,
    /// False for an unknown user: the exchange runs with a made-up verifier and fails at the
    /// end, so that a client cannot tell unknown users from wrong passwords.
    known: bool,
    client_first_bare: String,
    server_first: String,
    gs2_header: String,
    nonce: String,
}

impl Exchange {
    /// Handles the client-first message; returns the exchange and the server-first message.
    pub fn start(verifier: Option<&Verifier>, client_first: &str) -> Result<(Exchange, String), ScramError> {
        let malformed = |what: &str| ScramError::Malformed(format!("malformed SCRAM message: {what}"));
        // gs2-header: "n,," or "y,," (no channel binding), then the bare message.
        let mut parts = client_first.splitn(3, ',');
        let binding = parts.next().ok_or_else(|| malformed("no channel binding flag"))?;
        if binding.starts_with('p') {
            return Err(ScramError::Malformed("channel binding is not supported (use SCRAM-SHA-256)".into()));
        }
        if binding != "n" && binding != "y" {
            return Err(malformed("bad channel binding flag"));
        }
        let authzid = parts.next().ok_or_else(|| malformed("no authorization identity field"))?;
        let bare = parts.next().ok_or_else(|| malformed("no client-first-message-bare"))?;
        let client_nonce = bare
            .split(',')
            .find_map(|field| field.strip_prefix("r="))
            .filter(|nonce| !nonce.is_empty() && nonce.bytes().all(|b| b.is_ascii_graphic() && b != b','))
            .ok_or_else(|| malformed("no client nonce"))?;
        let server_nonce: [u8; 18] = rand::random();
        let nonce = format!("{client_nonce}{}", B64.encode(server_nonce));
        let (verifier, known) = match verifier {
            Some(verifier) => (verifier.clone(), true),
            None => (
                Verifier::with_salt(&B64.encode(rand::random::<[u8; 16]>()), &rand::random::<[u8; 16]>(), ITERATIONS),
                false,
            ),
        };
        let server_first = format!("r={nonce},s={},i={}", B64.encode(&verifier.salt), verifier.iterations);
        let exchange = Exchange {
            verifier,
            known,
            client_first_bare: bare.to_string(),
            server_first: server_first.clone(),
            gs2_header: format!("{binding},{authzid},"),
            nonce,
        };
        Ok((exchange, server_first))
    }

    /// Checks the client-final message; returns the server-final message on success.
    pub fn finish(&self, client_final: &str) -> Result<String, ScramError> {
        let malformed = |what: &str| ScramError::Malformed(format!("malformed SCRAM message: {what}"));
        let (without_proof, proof) = client_final.rsplit_once(",p=").ok_or_else(|| malformed("no proof"))?;
        let mut binding = None;
        let mut nonce = None;
        for field in without_proof.split(',') {
            if let Some(value) = field.strip_prefix("c=") {
                binding = Some(value);
            } else if let Some(value) = field.strip_prefix("r=") {
                nonce = Some(value);
            }
        }
        if binding != Some(B64.encode(&self.gs2_header).as_str()) {
            return Err(malformed("channel binding does not match"));
        }
        if nonce != Some(self.nonce.as_str()) {
            return Err(malformed("nonce does not match"));
        }
        let proof: [u8; 32] =
            B64.decode(proof).ok().and_then(|proof| proof.try_into().ok()).ok_or_else(|| malformed("bad proof"))?;
        let auth_message = format!("{},{},{}", self.client_first_bare, self.server_first, without_proof);
        let signature = hmac(&self.verifier.stored_key, auth_message.as_bytes());
        let mut client_key = proof;
        for (key, sig) in client_key.iter_mut().zip(signature) {
            *key ^= sig;
        }
        let stored: [u8; 32] = Sha256::digest(client_key).into();
        // Constant-time comparison of the stored keys.
        let differs = stored.iter().zip(self.verifier.stored_key).fold(0u8, |acc, (a, b)| acc | (a ^ b));
        if differs != 0 || !self.known {
            return Err(ScramError::WrongPassword);
        }
        let server_signature = hmac(&self.verifier.server_key, auth_message.as_bytes());
        Ok(format!("v={}", B64.encode(server_signature)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The client's side, as RFC 5802 describes it.
    fn client_final(password: &str, client_first_bare: &str, server_first: &str) -> String {
        let fields: Vec<&str> = server_first.split(',').collect();
        let nonce = &fields[0][2..];
        let salt = B64.decode(&fields[1][2..]).unwrap();
        let iterations: u32 = fields[2][2..].parse().unwrap();
        let salted = hi(password.as_bytes(), &salt, iterations);
        let client_key = hmac(&salted, b"Client Key");
        let stored: [u8; 32] = Sha256::digest(client_key).into();
        let without_proof = format!("c=biws,r={nonce}");
        let auth = format!("{client_first_bare},{server_first},{without_proof}");
        let signature = hmac(&stored, auth.as_bytes());
        let proof: Vec<u8> = client_key.iter().zip(signature).map(|(a, b)| a ^ b).collect();
        format!("{without_proof},p={}", B64.encode(proof))
    }

    #[test]
    fn hi_matches_the_rfc_7677_vector() {
        // RFC 7677 section 3: user "user", password "pencil", salt W22ZaJ0SNY7soEsUEjb6gQ==,
        // 4096 iterations; the server's signature is known.
        let salt = B64.decode("W22ZaJ0SNY7soEsUEjb6gQ==").unwrap();
        let verifier = Verifier::with_salt("pencil", &salt, 4096);
        let client_first_bare = "n=user,r=rOprNGfwEbeRWgbNEkqO";
        let server_first = "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
        let without_proof = "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";
        let auth = format!("{client_first_bare},{server_first},{without_proof}");
        let server_signature = B64.encode(hmac(&verifier.server_key, auth.as_bytes()));
        assert_eq!(server_signature, "6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=");
    }

    #[test]
    fn exchange_accepts_the_right_password_only() {
        let verifier = Verifier::new("secret");
        assert_eq!(Verifier::decode(&verifier.encode()), Some(verifier.clone()));
        let first = "n,,n=,r=abcdefghijklmnop";
        let (exchange, server_first) = Exchange::start(Some(&verifier), first).unwrap();
        assert!(exchange.finish(&client_final("secret", "n=,r=abcdefghijklmnop", &server_first)).is_ok());
        let (exchange, server_first) = Exchange::start(Some(&verifier), first).unwrap();
        assert_eq!(
            exchange.finish(&client_final("wrong", "n=,r=abcdefghijklmnop", &server_first)),
            Err(ScramError::WrongPassword)
        );
        // An unknown user fails even with a proof computed from its made-up salt.
        let (exchange, server_first) = Exchange::start(None, first).unwrap();
        assert_eq!(
            exchange.finish(&client_final("", "n=,r=abcdefghijklmnop", &server_first)),
            Err(ScramError::WrongPassword)
        );
        assert!(matches!(
            Exchange::start(Some(&verifier), "p=tls-server-end-point,,n=,r=x"),
            Err(ScramError::Malformed(_))
        ));
        assert!(matches!(Exchange::start(Some(&verifier), "garbage"), Err(ScramError::Malformed(_))));
        assert!(matches!(exchange.finish("c=biws"), Err(ScramError::Malformed(_))));
    }
}
