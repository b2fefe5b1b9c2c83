//! The certificates this crate's TLS clients trust: the web's roots, and
//! those of a CA file (a private CA). One store, built one way, for the
//! broker's handshake check and for the OAuth issuer.

use std::path::Path;

/// The web's roots (webpki-roots), and every certificate of the PEM file
/// `ca_file` when one is given.
///
/// # Errors
/// A sentence naming the file: it cannot be read, is not PEM, holds no
/// certificate, or holds one rustls cannot use.
pub(crate) fn trusted(ca_file: Option<&Path>) -> Result<rustls::RootCertStore, String> {
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    let Some(path) = ca_file else {
        return Ok(roots);
    };
    let text = std::fs::read(path)
        .map_err(|error| format!("cannot read the CA file {}: {error}", path.display()))?;
    let blocks = pem::parse_many(&text)
        .map_err(|error| format!("the CA file {} is not PEM: {error}", path.display()))?;
    let mut added = 0;
    for certificate in blocks.iter().filter(|block| block.tag() == "CERTIFICATE") {
        roots
            .add(certificate.contents().to_vec().into())
            .map_err(|error| {
                format!(
                    "the CA file {} has an unusable certificate: {error}",
                    path.display()
                )
            })?;
        added += 1;
    }
    if added == 0 {
        return Err(format!("the CA file {} has no certificate", path.display()));
    }
    Ok(roots)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_web_roots_and_a_ca_file_or_a_sentence_naming_it() {
        let web = trusted(None).unwrap().len();
        assert!(web > 100, "{web} roots");
        let dir = std::env::temp_dir().join(format!("roots-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let missing = dir.join("missing.pem");
        assert!(trusted(Some(&missing))
            .unwrap_err()
            .starts_with(&format!("cannot read the CA file {}", missing.display())));
        let empty = dir.join("empty.pem");
        std::fs::write(&empty, "no certificate here\n").unwrap();
        assert_eq!(
            trusted(Some(&empty)).unwrap_err(),
            format!("the CA file {} has no certificate", empty.display())
        );
        let junk = dir.join("junk.pem");
        std::fs::write(
            &junk,
            "-----BEGIN CERTIFICATE-----\naGVsbG8=\n-----END CERTIFICATE-----\n",
        )
        .unwrap();
        assert!(trusted(Some(&junk)).unwrap_err().starts_with(&format!(
            "the CA file {} has an unusable certificate",
            junk.display()
        )));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
