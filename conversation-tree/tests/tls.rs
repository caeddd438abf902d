//! TLS to PostgreSQL: a throwaway cluster that serves TLS only, with a certificate issued in
//! the test by a CA of its own, for `localhost`; each `sslmode` connects or fails as libpq
//! documents it.

use conversation_tree::Store as _;
use conversation_tree::pg_connect::PgConnect;
use conversation_tree::testing::{Lifetime, PgCluster};
use conversation_tree::{PostgresStore, StoreError};
use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};

/// The CA's certificate, and the server's certificate (for `localhost` only) and key, in PEM.
fn certificates() -> (String, String, String) {
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_key = KeyPair::generate().unwrap();
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca, ca_key);
    let server_key = KeyPair::generate().unwrap();
    let server = CertificateParams::new(vec!["localhost".to_owned()])
        .unwrap()
        .signed_by(&server_key, &issuer)
        .unwrap();
    (ca_cert.pem(), server.pem(), server_key.serialize_pem())
}

/// Whether the session of `client` is encrypted, as the server sees it.
async fn encrypted(client: &tokio_postgres::Client) -> bool {
    client
        .query_one(
            "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
            &[],
        )
        .await
        .unwrap()
        .get(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_sslmode_connects_or_fails_as_libpq_documents() {
    let (ca, cert, key) = certificates();
    let cluster = tokio::task::spawn_blocking(move || {
        PgCluster::start_with_tls(Lifetime::Process, &cert, &key)
    })
    .await
    .unwrap()
    .unwrap_or_else(|err| panic!("{err}"));
    let dir = tempfile::tempdir().unwrap();
    let ca_file = dir.path().join("ca.pem");
    std::fs::write(&ca_file, ca).unwrap();
    let root = ca_file.display().to_string();
    let port = cluster.port();
    let url =
        |host: &str, query: &str| format!("postgres://postgres@{host}:{port}/postgres?{query}");

    // `require` encrypts without checking the certificate; the store works over it.
    let require = url("127.0.0.1", "sslmode=require");
    let client = PgConnect::parse(&require).unwrap().connect().await.unwrap();
    assert!(encrypted(&client).await);
    let store = PostgresStore::connect(&require).await.unwrap();
    assert!(store.conversations(1).await.unwrap().is_empty());

    // The default (`prefer`) takes the TLS the server offers.
    let client = PgConnect::parse(&url("127.0.0.1", ""))
        .unwrap()
        .connect()
        .await
        .unwrap();
    assert!(encrypted(&client).await);

    // `verify-full` with the CA connects to the name the certificate was issued for.
    let full = url(
        "localhost",
        &format!("sslmode=verify-full&sslrootcert={root}"),
    );
    let client = PgConnect::parse(&full).unwrap().connect().await.unwrap();
    assert!(encrypted(&client).await);
    PostgresStore::connect(&full).await.unwrap();

    // ... and not to another name for the same server; `verify-ca` does not check the name.
    let other_name = url(
        "127.0.0.1",
        &format!("sslmode=verify-full&sslrootcert={root}"),
    );
    let err = PgConnect::parse(&other_name)
        .unwrap()
        .connect()
        .await
        .unwrap_err();
    assert!(err.to_string().contains("certificate was refused"), "{err}");
    assert!(err.to_string().contains("not valid for name"), "{err}");
    let ca_only = url(
        "127.0.0.1",
        &format!("sslmode=verify-ca&sslrootcert={root}"),
    );
    PgConnect::parse(&ca_only).unwrap().connect().await.unwrap();

    // Without the CA the certificate is refused, and the error says what to do.
    let err = PostgresStore::connect(&url("localhost", "sslmode=verify-full"))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Database { .. }), "{err}");
    let message = err.to_string();
    assert!(message.contains("UnknownIssuer"), "{message}");
    assert!(message.contains("certificate was refused"), "{message}");
    assert!(message.contains("sslrootcert=PATH"), "{message}");

    // The cluster takes TLS connections only: `disable` is turned away.
    let err = PgConnect::parse(&url("127.0.0.1", "sslmode=disable"))
        .unwrap()
        .connect()
        .await
        .unwrap_err();
    assert!(err.to_string().contains("no encryption"), "{err}");
    cluster.stop().unwrap();
}
