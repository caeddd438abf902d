use std::path::PathBuf;

use super::url::{Split, split};
use super::*;

#[test]
fn tls_options_are_taken_out_of_both_url_forms() {
    assert_eq!(
        split("postgres://u:p@h:5/db?sslmode=verify-full&sslrootcert=%2Fetc%2Fca%20x.pem&application_name=s")
            .unwrap(),
        Split {
            mode: Some(SslMode::VerifyFull),
            root_cert: Some(PathBuf::from("/etc/ca x.pem")),
            rest: "postgres://u:p@h:5/db?application_name=s".to_owned(),
        }
    );
    assert_eq!(
        split("postgresql://h/db?sslmode=require").unwrap().rest,
        "postgresql://h/db"
    );
    assert_eq!(
        split("host=h password='a  b' sslmode=verify-ca sslrootcert=/ca.pem").unwrap(),
        Split {
            mode: Some(SslMode::VerifyCa),
            root_cert: Some(PathBuf::from("/ca.pem")),
            rest: "host=h password='a  b'".to_owned(),
        }
    );
}

#[test]
fn bad_tls_options_are_refused_by_name() {
    let err = PgConnect::parse("postgres://h/db?sslmode=allow").unwrap_err();
    assert!(
        matches!(&err, ConnectError::SslMode { value } if value == "allow"),
        "{err}"
    );
    let err = PgConnect::parse("postgres://h/db?sslcert=/c.pem").unwrap_err();
    assert!(
        matches!(err, ConnectError::Unsupported { option: "sslcert" }),
        "{err}"
    );
    let err =
        PgConnect::parse("postgres://h/db?sslmode=verify-full&sslrootcert=/nonexistent/ca.pem")
            .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("sslrootcert /nonexistent/ca.pem cannot be used: "),
        "{err}"
    );
    let err = PgConnect::parse("postgres://u:secret@h/db?bogus=1").unwrap_err();
    assert!(matches!(err, ConnectError::Url { .. }), "{err}");
    assert!(!err.to_string().contains("secret"), "{err}");
}

#[test]
fn modes_map_to_what_tokio_postgres_negotiates() {
    use tokio_postgres::config::SslMode as Negotiated;
    for (url, mode, negotiated) in [
        ("postgres://h/db", SslMode::Prefer, Negotiated::Prefer),
        (
            "postgres://h/db?sslmode=disable",
            SslMode::Disable,
            Negotiated::Disable,
        ),
        (
            "postgres://h/db?sslmode=require",
            SslMode::Require,
            Negotiated::Require,
        ),
        (
            "postgres://h/db?sslmode=verify-ca",
            SslMode::VerifyCa,
            Negotiated::Require,
        ),
        (
            "host=h sslmode=verify-full",
            SslMode::VerifyFull,
            Negotiated::Require,
        ),
    ] {
        let connect = PgConnect::parse(url).unwrap();
        assert_eq!(connect.ssl_mode(), mode, "{url}");
        assert_eq!(connect.config().get_ssl_mode(), negotiated, "{url}");
    }
}
