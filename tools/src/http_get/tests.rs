use serde_json::{Value, json};
use toolchain::DynTool;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use super::*;

async fn get(policy: &HttpGetPolicy, url: &str) -> Result<Value, ToolError> {
    let tool = DynTool::new(HttpGet::new(policy).unwrap()).unwrap();
    tool.call_json_text(&ExecutionContext::new(), &json!({ "url": url }).to_string())
        .await
        .map(|out| out.text)
}

fn error(result: Result<Value, ToolError>) -> String {
    match result {
        Ok(value) => panic!("expected an error, got {value}"),
        Err(err) => err.to_string(),
    }
}

#[test]
fn allow_list_entries() {
    let exact = Allowed::parse("Example.com").unwrap();
    assert!(exact.matches("example.com", Some(443)));
    assert!(!exact.matches("api.example.com", Some(443)));
    assert!(!exact.matches("evilexample.com", Some(443)));

    let wildcard = Allowed::parse("*.example.com").unwrap();
    assert!(wildcard.matches("api.example.com", Some(443)));
    assert!(!wildcard.matches("example.com", Some(443)));
    assert!(!wildcard.matches("evilexample.com", Some(443)));

    let port = Allowed::parse("127.0.0.1:8080").unwrap();
    assert!(port.matches("127.0.0.1", Some(8080)));
    assert!(!port.matches("127.0.0.1", Some(8081)));

    let v6 = Allowed::parse("[::1]:9000").unwrap();
    assert!(v6.matches("[::1]", Some(9000)));

    for bad in [
        "https://example.com",
        "example.com/path",
        "host:port",
        "",
        "[::1",
    ] {
        assert!(Allowed::parse(bad).is_err(), "{bad}");
    }
    assert!(matches!(
        HttpGet::new(&HttpGetPolicy::allow(Vec::<String>::new())),
        Err(HttpGetPolicyError::Empty)
    ));
}

#[tokio::test]
async fn fetches_allowed_hosts_and_refuses_others() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/page"))
        .respond_with(ResponseTemplate::new(200).set_body_raw("hello web", "text/plain"))
        .mount(&server)
        .await;
    let port = server.address().port();
    let policy = HttpGetPolicy::allow([format!("127.0.0.1:{port}")]);

    let page = get(&policy, &format!("{}/page", server.uri()))
        .await
        .unwrap();
    assert_eq!(
        page,
        json!({
            "url": format!("{}/page", server.uri()),
            "status": 200,
            "content_type": "text/plain",
            "body": "hello web",
            "truncated": false,
        })
    );

    let err = error(get(&policy, &format!("http://localhost:{port}/page")).await);
    assert!(
        err.contains("not on this server's http_get allow-list"),
        "{err}"
    );
    let err = error(get(&policy, "file:///etc/passwd").await);
    assert!(err.contains("only http and https"), "{err}");
    let err = error(get(&policy, &format!("http://user:pw@127.0.0.1:{port}/page")).await);
    assert!(err.contains("credentials"), "{err}");
    let err = error(get(&policy, "not a url").await);
    assert!(err.contains("is not a URL"), "{err}");
    // Nothing but the one allowed request reached the server.
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
}

#[tokio::test]
async fn redirects_only_to_allowed_hosts() {
    let allowed = MockServer::start().await;
    let elsewhere = MockServer::start().await;
    Mock::given(path("/away"))
        .respond_with(
            ResponseTemplate::new(302)
                .insert_header("location", format!("{}/secret", elsewhere.uri()).as_str()),
        )
        .mount(&allowed)
        .await;
    Mock::given(path("/home"))
        .respond_with(ResponseTemplate::new(302).insert_header("location", "/page"))
        .mount(&allowed)
        .await;
    Mock::given(path("/page"))
        .respond_with(ResponseTemplate::new(200).set_body_string("landed"))
        .mount(&allowed)
        .await;
    let policy = HttpGetPolicy::allow([format!("127.0.0.1:{}", allowed.address().port())]);

    let landed = get(&policy, &format!("{}/home", allowed.uri()))
        .await
        .unwrap();
    assert_eq!(landed["body"], "landed");
    assert_eq!(landed["url"], format!("{}/page", allowed.uri()));

    let err = error(get(&policy, &format!("{}/away", allowed.uri())).await);
    assert!(err.contains("redirect refused"), "{err}");
    assert!(elsewhere.received_requests().await.unwrap().is_empty());
}

#[tokio::test]
async fn bodies_are_cut_and_slow_servers_time_out() {
    let server = MockServer::start().await;
    Mock::given(path("/big"))
        .respond_with(ResponseTemplate::new(200).set_body_string("x".repeat(10_000)))
        .mount(&server)
        .await;
    Mock::given(path("/slow"))
        .respond_with(ResponseTemplate::new(200).set_delay(Duration::from_secs(5)))
        .mount(&server)
        .await;
    let policy = HttpGetPolicy {
        max_bytes: 100,
        timeout_secs: 1,
        ..HttpGetPolicy::allow([format!("127.0.0.1:{}", server.address().port())])
    };
    let big = get(&policy, &format!("{}/big", server.uri()))
        .await
        .unwrap();
    assert_eq!(big["body"].as_str().unwrap().len(), 100);
    assert_eq!(big["truncated"], true);

    let started = std::time::Instant::now();
    let err = error(get(&policy, &format!("{}/slow", server.uri())).await);
    assert!(err.contains("failed"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(4));
}
