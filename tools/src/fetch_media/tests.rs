use std::str::FromStr as _;

use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use super::*;

fn fetcher(allow_private: &[&str], max_bytes: usize) -> MediaFetcher {
    MediaFetcher::new(&MediaFetchPolicy {
        allow_private: allow_private
            .iter()
            .map(|host| (*host).to_owned())
            .collect(),
        max_bytes,
        timeout_secs: 5,
    })
    .expect("valid policy")
}

#[tokio::test]
async fn internal_addresses_are_refused_before_any_request() {
    let fetcher = fetcher(&[], 1024);
    for (url, kind) in [
        ("http://127.0.0.1/cat.png", "loopback"),
        ("http://127.8.9.10:8080/cat.png", "loopback"),
        ("http://[::1]/cat.png", "loopback"),
        ("http://[::ffff:127.0.0.1]/cat.png", "loopback"),
        ("http://localhost:3000/cat.png", "loopback"),
        ("http://api.localhost/cat.png", "loopback"),
        ("http://10.1.2.3/cat.png", "private"),
        ("http://192.168.0.1/cat.png", "private"),
        ("http://172.16.5.4/cat.png", "private"),
        ("http://100.64.0.1/cat.png", "private"),
        ("http://[fd00::1]/cat.png", "private"),
        ("http://169.254.169.254/latest/meta-data", "link-local"),
        ("http://[fe80::1]/cat.png", "link-local"),
        ("http://0.0.0.0/cat.png", "reserved"),
    ] {
        let error = fetcher.fetch(url).await.expect_err(url);
        assert!(
            matches!(&error, MediaFetchError::Refused { url: u, .. } if u == url),
            "{url}: {error}"
        );
        assert!(error.to_string().contains(kind), "{url}: {error}");
    }
}

#[tokio::test]
async fn scheme_and_credentials_follow_http_get() {
    let fetcher = fetcher(&[], 1024);
    let error = fetcher.fetch("file:///etc/passwd").await.unwrap_err();
    assert!(error.to_string().contains("only http and https"), "{error}");
    let error = fetcher
        .fetch("https://user:pw@example.com/a.png")
        .await
        .unwrap_err();
    assert!(error.to_string().contains("credentials"), "{error}");
    let error = fetcher.fetch("not a url").await.unwrap_err();
    assert!(matches!(error, MediaFetchError::BadUrl { .. }), "{error}");
}

#[tokio::test]
async fn a_name_that_resolves_inside_is_refused_by_the_resolver() {
    let rules = Arc::new(Rules(AllowList(Vec::new())));
    let resolver = PublicResolver(rules);
    let error = resolver
        .resolve(Name::from_str("localhost").expect("a name"))
        .await
        .err()
        .expect("refused");
    assert!(error.to_string().contains("internal address"), "{error}");
}

#[tokio::test]
async fn an_allowed_internal_host_is_fetched_within_the_limits() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/cat.png"))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("content-type", "image/PNG; charset=binary")
                .set_body_bytes(b"\x89PNG".to_vec()),
        )
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/big.png"))
        .respond_with(ResponseTemplate::new(200).set_body_bytes(vec![0u8; 2048]))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/gone.png"))
        .respond_with(ResponseTemplate::new(404))
        .mount(&server)
        .await;
    let port = server.address().port();
    Mock::given(method("GET"))
        .and(path("/hop"))
        .respond_with(
            ResponseTemplate::new(302)
                .insert_header("location", format!("http://localhost:{port}/cat.png")),
        )
        .mount(&server)
        .await;
    let fetcher = fetcher(&["127.0.0.1"], 1024);
    let url = format!("{}/cat.png", server.uri());
    let fetched = fetcher.fetch(&url).await.expect("allowed");
    assert_eq!(fetched.bytes, b"\x89PNG");
    assert_eq!(fetched.content_type.as_deref(), Some("image/png"));

    let error = fetcher
        .fetch(&format!("{}/big.png", server.uri()))
        .await
        .unwrap_err();
    assert!(
        matches!(error, MediaFetchError::TooLarge { limit: 1024, .. }),
        "{error}"
    );
    assert!(error.to_string().contains("1024-byte limit"), "{error}");

    let error = fetcher
        .fetch(&format!("{}/gone.png", server.uri()))
        .await
        .unwrap_err();
    assert!(
        matches!(error, MediaFetchError::Status { status: 404, .. }),
        "{error}"
    );

    // A redirect is checked again: `localhost` is not the allowed `127.0.0.1`.
    let error = fetcher
        .fetch(&format!("{}/hop", server.uri()))
        .await
        .unwrap_err();
    assert!(error.to_string().contains("redirect refused"), "{error}");
    assert!(error.to_string().contains("loopback"), "{error}");

    // Allowed on one port only, the host is refused on another.
    let fetcher = MediaFetcher::new(&MediaFetchPolicy {
        allow_private: vec![format!("127.0.0.1:{}", port.wrapping_add(1))],
        ..MediaFetchPolicy::default()
    })
    .expect("valid");
    let error = fetcher.fetch(&url).await.unwrap_err();
    assert!(error.to_string().contains("loopback"), "{error}");
}

#[test]
fn a_bad_allow_entry_names_itself() {
    let error = MediaFetcher::new(&MediaFetchPolicy {
        allow_private: vec!["http://x/".into()],
        ..MediaFetchPolicy::default()
    })
    .unwrap_err();
    assert!(error.to_string().contains("`http://x/`"), "{error}");
}
