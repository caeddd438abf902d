//! The `web_search` tool against loopback fakes of SearxNG, Brave Search and Tavily answering
//! with their documented shapes: the requests each backend receives (path, parameters, key
//! header, body), every field of the tool's output, errors (refused key, rate limit, server
//! error, malformed JSON, timeout, cancellation) that never show the key, deduplication, the
//! configuration read from YAML and checked at start, and a run through `POST /v1/response`.

use crate::support;

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use server::{Server, ServerConfig};
use service::ServiceConfig;
use support::{TestServer, events, names, terminal};
use toolchain::{CancellationToken, DynTool, ExecutionContext, ToolError};
use tools::{ToolsConfig, WebSearch, WebSearchConfig};
use wiremock::matchers::{body_json, header, method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

/// Sets a test's own environment variable (each test uses a unique name, so tests running at
/// once never see each other's keys).
fn set_env(name: &str, value: &str) {
    // SAFETY: every variable set here has a name no other test and no library reads, and
    // the std environment lock serialises this with every `std::env::var`.
    #[allow(unsafe_code)]
    unsafe {
        std::env::set_var(name, value);
    }
}

fn tool(config: &WebSearchConfig) -> DynTool {
    DynTool::new(WebSearch::new(config).expect("a usable configuration")).unwrap()
}

async fn search(tool: &DynTool, input: Value) -> Result<Value, ToolError> {
    tool.call_json_text(&ExecutionContext::new(), &input.to_string())
        .await
        .map(|out| out.text)
}

fn error(result: Result<Value, ToolError>) -> String {
    match result {
        Ok(value) => panic!("expected an error, got {value}"),
        Err(err) => err.to_string(),
    }
}

/// The only request `mock` received (asserting it received one).
async fn only_request(mock: &MockServer) -> wiremock::Request {
    let mut requests = mock.received_requests().await.unwrap();
    assert_eq!(requests.len(), 1, "{requests:?}");
    requests.remove(0)
}

fn brave(url: String, key_env: &str) -> WebSearchConfig {
    WebSearchConfig::Brave {
        url: Some(url),
        api_key_env: Some(key_env.to_owned()),
        max_results: None,
        timeout_secs: None,
    }
}

fn tavily(url: String, key_env: &str) -> WebSearchConfig {
    WebSearchConfig::Tavily {
        url: Some(url),
        api_key_env: Some(key_env.to_owned()),
        max_results: None,
        timeout_secs: None,
    }
}

/// A SearxNG answer as an instance with `json` in `search.formats` gives it.
fn searxng_answer() -> Value {
    json!({
        "query": "rust language",
        "number_of_results": 0,
        "results": [
            {
                "url": "https://www.rust-lang.org/",
                "title": "Rust Programming Language",
                "content": "A language empowering everyone to build reliable and efficient software.",
                "publishedDate": null,
                "thumbnail": "",
                "engine": "duckduckgo",
                "template": "default.html",
                "parsed_url": ["https", "www.rust-lang.org", "/", "", "", ""],
                "img_src": "",
                "priority": "",
                "engines": ["duckduckgo", "brave", "google"],
                "positions": [1, 1, 1],
                "score": 9.0,
                "category": "general"
            },
            {
                "url": "https://en.wikipedia.org/wiki/Rust_(programming_language)",
                "title": "Rust (programming language) - Wikipedia",
                "content": "<strong>Rust</strong> is a general-purpose programming language emphasizing performance, type safety, and concurrency. It&#39;s memory safe &amp; fast.",
                "engine": "wikipedia",
                "engines": ["wikipedia", "google"],
                "positions": [2, 3],
                "score": 4.5,
                "category": "general"
            },
            {
                "url": "https://www.rust-lang.org/#install",
                "title": "Install Rust",
                "content": "The same page again, under an anchor.",
                "engine": "bing",
                "score": 1.0,
                "category": "general"
            },
            {
                "url": "https://doc.rust-lang.org/book/",
                "engine": "google",
                "score": 0.8,
                "category": "general"
            }
        ],
        "answers": [],
        "corrections": [],
        "infoboxes": [],
        "suggestions": ["rust language tutorial"],
        "unresponsive_engines": [["qwant", "timeout"]]
    })
}

/// The tool's output for `query`: each page `(title, url, snippet)` is both a result and a
/// source.
fn found(query: &str, pages: &[(&str, &str, &str)]) -> Value {
    let results: Vec<Value> = pages
        .iter()
        .map(|(title, url, snippet)| json!({"title": title, "url": url, "snippet": snippet}))
        .collect();
    let sources: Vec<Value> = pages
        .iter()
        .map(|(title, url, snippet)| json!({"title": title, "location": url, "passage": snippet}))
        .collect();
    json!({"query": query, "results": results, "sources": sources})
}

/// The first two pages of `searxng_answer`, as the tool gives them.
const RUST_LANG: (&str, &str, &str) = (
    "Rust Programming Language",
    "https://www.rust-lang.org/",
    "A language empowering everyone to build reliable and efficient software.",
);
const RUST_WIKIPEDIA: (&str, &str, &str) = (
    "Rust (programming language) - Wikipedia",
    "https://en.wikipedia.org/wiki/Rust_(programming_language)",
    "Rust is a general-purpose programming language emphasizing performance, type safety, and \
     concurrency. It's memory safe & fast.",
);

/// A SearxNG instance answering `searxng_answer` to a JSON search for `query` at `/search`.
async fn searxng_for(query: &str) -> MockServer {
    let mock = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/search"))
        .and(query_param("q", query))
        .and(query_param("format", "json"))
        .respond_with(ResponseTemplate::new(200).set_body_json(searxng_answer()))
        .mount(&mock)
        .await;
    mock
}

/// Tavily answers the search for `query` (with the default options) with `answer`.
async fn tavily_answers(mock: &MockServer, query: &str, answer: ResponseTemplate) {
    Mock::given(method("POST"))
        .and(body_json(json!({
            "query": query, "max_results": 5, "search_depth": "basic",
            "include_answer": false, "include_raw_content": false, "include_images": false,
        })))
        .respond_with(answer)
        .mount(mock)
        .await;
}

/// A server configuration whose `web_search` tool uses `web_search`.
fn with_web_search(web_search: WebSearchConfig) -> ServerConfig {
    ServerConfig {
        service: ServiceConfig {
            tools: ToolsConfig {
                web_search: Some(web_search),
                ..ToolsConfig::default()
            },
            ..ServiceConfig::default()
        },
        ..ServerConfig::default()
    }
}

#[tokio::test]
async fn searxng_results_with_their_sources() {
    let mock = searxng_for("rust language").await;
    // The instance's address; `/search` is appended.
    let tool = tool(&WebSearchConfig::searxng(mock.uri()));
    assert_eq!(tool.name(), "web_search");

    let out = search(&tool, json!({"query": "  rust language "}))
        .await
        .unwrap();
    assert_eq!(
        out,
        found(
            "rust language",
            &[
                RUST_LANG,
                RUST_WIKIPEDIA,
                // The anchor of the first page was a duplicate; a missing title is the URL,
                // a missing content an empty snippet.
                (
                    "https://doc.rust-lang.org/book/",
                    "https://doc.rust-lang.org/book/",
                    "",
                ),
            ],
        )
    );
    let request = only_request(&mock).await;
    assert_eq!(request.url.path(), "/search");
    let params: Vec<(String, String)> = request.url.query_pairs().into_owned().collect();
    assert_eq!(
        params,
        [
            ("q".to_owned(), "rust language".to_owned()),
            ("format".to_owned(), "json".to_owned())
        ]
    );
    assert_eq!(request.headers["accept"], "application/json");
    assert!(request.headers.get("authorization").is_none());

    // SearxNG has no count parameter: the tool keeps the first ones.
    let out = search(&tool, json!({"query": "rust language", "max_results": 1}))
        .await
        .unwrap();
    assert_eq!(out["results"].as_array().unwrap().len(), 1);
    assert_eq!(out["sources"].as_array().unwrap().len(), 1);
    assert_eq!(out["results"][0]["url"], "https://www.rust-lang.org/");
}

#[tokio::test]
async fn brave_sends_its_key_and_count() {
    let key = "BSA-test-key-brave-1";
    set_env("SKEIN_TEST_BRAVE_KEY_RESULTS", key);
    let mock = MockServer::start().await;
    let answer = json!({
        "query": {
            "original": "rust",
            "show_strict_warning": false,
            "is_navigational": true,
            "is_news_breaking": false,
            "spellcheck_off": true,
            "country": "us",
            "bad_results": false,
            "should_fallback": false,
            "postal_code": "",
            "city": "",
            "header_country": "",
            "more_results_available": true,
            "state": ""
        },
        "mixed": {
            "type": "mixed",
            "main": [{"type": "web", "index": 0, "all": false}, {"type": "web", "index": 1, "all": false}],
            "top": [],
            "side": []
        },
        "type": "search",
        "web": {
            "type": "search",
            "results": [
                {
                    "title": "Rust Programming Language",
                    "url": "https://www.rust-lang.org/",
                    "is_source_local": false,
                    "is_source_both": false,
                    "description": "<strong>Rust</strong> is a fast, reliable and productive language for building software &mdash; from embedded devices to web services.",
                    "page_age": "2025-05-01T00:00:00",
                    "profile": {
                        "name": "Rust-lang",
                        "url": "https://www.rust-lang.org/",
                        "long_name": "rust-lang.org",
                        "img": "https://imgs.search.brave.com/x.png"
                    },
                    "language": "en",
                    "family_friendly": true,
                    "type": "search_result",
                    "subtype": "generic",
                    "is_live": false,
                    "meta_url": {
                        "scheme": "https",
                        "netloc": "rust-lang.org",
                        "hostname": "www.rust-lang.org",
                        "favicon": "https://imgs.search.brave.com/f.png",
                        "path": ""
                    },
                    "age": "May 1, 2025"
                },
                {
                    "title": "The <strong>Rust</strong> Programming Language - The <strong>Rust</strong> Book",
                    "url": "https://doc.rust-lang.org/book/",
                    "is_source_local": false,
                    "is_source_both": false,
                    "description": "by Steve Klabnik, Carol Nichols, and Chris Krycho, with contributions from the <strong>Rust</strong> Community. This version of the text assumes you&#x27;re using <strong>Rust</strong> 1.85.0",
                    "language": "en",
                    "family_friendly": true,
                    "type": "search_result",
                    "subtype": "generic",
                    "extra_snippets": ["Welcome to The Rust Programming Language"]
                }
            ],
            "family_friendly": true
        }
    });
    Mock::given(method("GET"))
        .and(path("/res/v1/web/search"))
        .and(header("x-subscription-token", key))
        .respond_with(ResponseTemplate::new(200).set_body_json(answer))
        .mount(&mock)
        .await;
    let tool = tool(&brave(
        format!("{}/res/v1/web/search", mock.uri()),
        "SKEIN_TEST_BRAVE_KEY_RESULTS",
    ));
    let out = search(&tool, json!({"query": "rust", "max_results": 3}))
        .await
        .unwrap();
    assert_eq!(
        out,
        found(
            "rust",
            &[
                (
                    "Rust Programming Language",
                    "https://www.rust-lang.org/",
                    "Rust is a fast, reliable and productive language for building software — \
                     from embedded devices to web services.",
                ),
                (
                    "The Rust Programming Language - The Rust Book",
                    "https://doc.rust-lang.org/book/",
                    "by Steve Klabnik, Carol Nichols, and Chris Krycho, with contributions from \
                     the Rust Community. This version of the text assumes you're using Rust \
                     1.85.0",
                ),
            ],
        )
    );
    let request = only_request(&mock).await;
    assert_eq!(request.method.as_str(), "GET");
    assert_eq!(request.url.path(), "/res/v1/web/search");
    let params: Vec<(String, String)> = request.url.query_pairs().into_owned().collect();
    assert_eq!(
        params,
        [
            ("q".to_owned(), "rust".to_owned()),
            ("count".to_owned(), "3".to_owned())
        ]
    );
    assert_eq!(request.headers["x-subscription-token"], key);
    assert_eq!(request.headers["accept"], "application/json");
    assert!(request.headers.get("authorization").is_none());

    // No web results: Brave leaves `web` out.
    let empty = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({"type": "search", "query": {"original": "zzqx"}})),
        )
        .mount(&empty)
        .await;
    let tool = self::tool(&brave(empty.uri(), "SKEIN_TEST_BRAVE_KEY_RESULTS"));
    let out = search(&tool, json!({"query": "zzqx"})).await.unwrap();
    assert_eq!(out, json!({"query": "zzqx", "results": [], "sources": []}));
    // The configured default count (5).
    let request = only_request(&empty).await;
    assert!(
        request
            .url
            .query_pairs()
            .any(|(name, value)| name == "count" && value == "5"),
        "{}",
        request.url
    );
}

#[tokio::test]
async fn tavily_posts_its_query_with_a_bearer_key() {
    let key = "tvly-test-key-tavily-1";
    set_env("SKEIN_TEST_TAVILY_KEY_RESULTS", key);
    let mock = MockServer::start().await;
    let answer = json!({
        "query": "Who is Leo Messi?",
        "follow_up_questions": null,
        "answer": null,
        "images": [],
        "results": [
            {
                "title": "Lionel Messi - Wikipedia",
                "url": "https://en.wikipedia.org/wiki/Lionel_Messi",
                "content": "Lionel Andrés \"Leo\" Messi is an Argentine professional footballer who plays as a forward.",
                "score": 0.81025416,
                "raw_content": null
            },
            {
                "title": "Lionel Messi | Biography, Trophies, & Facts | Britannica",
                "url": "https://www.britannica.com/biography/Lionel-Messi",
                "content": "Lionel Messi, Argentine-born football (soccer) player who received a record-setting eight Ballon d'Or awards.",
                "score": 0.7763,
                "raw_content": null
            }
        ],
        "response_time": 1.67,
        "request_id": "123e4567-e89b-12d3-a456-426614174111"
    });
    Mock::given(method("POST"))
        .and(path("/search"))
        .and(header("authorization", format!("Bearer {key}").as_str()))
        .respond_with(ResponseTemplate::new(200).set_body_json(answer))
        .mount(&mock)
        .await;
    let tool = tool(&tavily(
        format!("{}/search", mock.uri()),
        "SKEIN_TEST_TAVILY_KEY_RESULTS",
    ));
    let out = search(
        &tool,
        json!({"query": "Who is Leo Messi?", "max_results": 2}),
    )
    .await
    .unwrap();
    assert_eq!(
        out,
        found(
            "Who is Leo Messi?",
            &[
                (
                    "Lionel Messi - Wikipedia",
                    "https://en.wikipedia.org/wiki/Lionel_Messi",
                    "Lionel Andrés \"Leo\" Messi is an Argentine professional footballer who \
                     plays as a forward.",
                ),
                (
                    "Lionel Messi | Biography, Trophies, & Facts | Britannica",
                    "https://www.britannica.com/biography/Lionel-Messi",
                    "Lionel Messi, Argentine-born football (soccer) player who received a \
                     record-setting eight Ballon d'Or awards.",
                ),
            ],
        )
    );
    let request = only_request(&mock).await;
    assert_eq!(request.method.as_str(), "POST");
    assert_eq!(request.url.path(), "/search");
    assert_eq!(request.url.query(), None);
    assert_eq!(request.headers["authorization"], format!("Bearer {key}"));
    assert_eq!(request.headers["content-type"], "application/json");
    let body: Value = serde_json::from_slice(&request.body).unwrap();
    assert_eq!(
        body,
        json!({
            "query": "Who is Leo Messi?",
            "max_results": 2,
            "search_depth": "basic",
            "include_answer": false,
            "include_raw_content": false,
            "include_images": false,
        })
    );
    // The key is only in its header.
    assert!(!String::from_utf8_lossy(&request.body).contains(key));
    assert!(!request.url.as_str().contains(key));
}

#[tokio::test]
async fn errors_say_what_happened_without_the_key() {
    let key = "tvly-secret-for-errors";
    set_env("SKEIN_TEST_TAVILY_KEY_ERRORS", key);
    let mock = MockServer::start().await;
    // A refused key, in Tavily's error shape; the answer even quotes the key back.
    tavily_answers(&mock, "refused", ResponseTemplate::new(401).set_body_json(
            json!({"detail": {"error": format!("Unauthorized: missing or invalid API key {key}.")}}),
        )).await;
    tavily_answers(
        &mock,
        "busy",
        ResponseTemplate::new(429)
            .set_body_json(json!({"detail": {"error": "Rate limit exceeded"}})),
    )
    .await;
    tavily_answers(
        &mock,
        "broken",
        ResponseTemplate::new(500).set_body_raw(
            "<html><body><h1>Internal Server Error</h1></body></html>",
            "text/html",
        ),
    )
    .await;
    tavily_answers(
        &mock,
        "garbled",
        ResponseTemplate::new(200).set_body_raw("{\"results\": [", "application/json"),
    )
    .await;
    tavily_answers(
        &mock,
        "odd",
        ResponseTemplate::new(200).set_body_json(json!({"results": {"title": "x"}})),
    )
    .await;
    tavily_answers(
        &mock,
        "moved",
        ResponseTemplate::new(307).insert_header("location", "http://elsewhere.example/search"),
    )
    .await;
    let tool = tool(&tavily(mock.uri(), "SKEIN_TEST_TAVILY_KEY_ERRORS"));
    let failure = |query: &'static str| {
        let tool = tool.clone();
        async move {
            let message = error(search(&tool, json!({ "query": query })).await);
            assert!(!message.contains(key), "{message}");
            message
        }
    };
    assert_eq!(
        failure("refused").await,
        "web search failed: the web search key was refused (HTTP 401): Unauthorized: missing or \
         invalid API key [REDACTED]."
    );
    assert_eq!(
        failure("busy").await,
        "web search failed: rate limited; try later (HTTP 429): Rate limit exceeded"
    );
    assert_eq!(
        failure("broken").await,
        "web search failed: Tavily failed (HTTP 500): Internal Server Error"
    );
    let garbled = failure("garbled").await;
    assert!(
        garbled.starts_with("web search failed: Tavily answered with something other than JSON"),
        "{garbled}"
    );
    assert_eq!(
        failure("odd").await,
        "web search failed: Tavily answered in an unexpected shape: `results` in the answer is \
         not a list"
    );
    let moved = failure("moved").await;
    assert!(moved.contains("redirect (HTTP 307)"), "{moved}");
    // The redirect was not followed (its host does not resolve anyway): one request each.
    assert_eq!(mock.received_requests().await.unwrap().len(), 6);

    // Brave answers an unknown key with its error object.
    set_env("SKEIN_TEST_BRAVE_KEY_ERRORS", "BSA-unknown");
    let brave_mock = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(422).set_body_json(json!({
            "type": "ErrorResponse",
            "error": {
                "id": "3b4b2b5e-0000-0000-0000-000000000000",
                "status": 422,
                "code": "SUBSCRIPTION_TOKEN_INVALID",
                "detail": "The provided subscription token is invalid.",
                "meta": {"component": "authentication"}
            },
            "time": 1_700_000_000
        })))
        .mount(&brave_mock)
        .await;
    let brave_tool = self::tool(&brave(brave_mock.uri(), "SKEIN_TEST_BRAVE_KEY_ERRORS"));
    assert_eq!(
        error(search(&brave_tool, json!({"query": "rust"})).await),
        "web search failed: the web search key was refused (HTTP 422): The provided \
         subscription token is invalid."
    );

    // A SearxNG instance without the JSON format answers 403.
    let searxng_mock = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(403).set_body_raw("Forbidden", "text/plain"))
        .mount(&searxng_mock)
        .await;
    let searxng_tool = self::tool(&WebSearchConfig::searxng(searxng_mock.uri()));
    assert_eq!(
        error(search(&searxng_tool, json!({"query": "rust"})).await),
        "web search failed: the SearxNG instance refused the request (its settings.yml must \
         list json under search.formats) (HTTP 403): Forbidden"
    );

    // Inputs the model got wrong.
    assert!(
        error(search(&searxng_tool, json!({"query": "   "})).await).contains("the query is empty")
    );
    assert!(
        error(search(&searxng_tool, json!({"query": "x".repeat(401)})).await)
            .contains("at most 400")
    );
    assert!(
        error(search(&searxng_tool, json!({"query": "rust", "max_results": 11})).await)
            .contains("1 to 10")
    );
    assert!(
        error(search(&searxng_tool, json!({"query": "rust", "max_results": 0})).await)
            .contains("1 to 10")
    );
    assert!(
        error(search(&searxng_tool, json!({"query": "rust", "page": 2})).await).contains("page")
    );
    // Only the first 403 reached the instance.
    assert_eq!(searxng_mock.received_requests().await.unwrap().len(), 1);
}

#[tokio::test]
async fn slow_backends_time_out_and_cancelled_searches_stop() {
    let mock = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(searxng_answer())
                .set_delay(Duration::from_secs(30)),
        )
        .mount(&mock)
        .await;
    let tool = tool(&WebSearchConfig::Searxng {
        url: Some(mock.uri()),
        max_results: None,
        timeout_secs: Some(1),
    });
    let started = Instant::now();
    assert_eq!(
        error(search(&tool, json!({"query": "rust"})).await),
        "web search failed: SearxNG did not answer within 1 seconds; try again later"
    );
    assert!(started.elapsed() < Duration::from_secs(10));

    let slow = self::tool(&WebSearchConfig::searxng(mock.uri()));
    let cancel = CancellationToken::new();
    let ctx = ExecutionContext::new().with_cancellation(cancel.clone());
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        cancel.cancel();
    });
    let started = Instant::now();
    let result = slow
        .call_json_text(&ctx, &json!({"query": "rust"}).to_string())
        .await;
    assert!(
        matches!(result, Err(ToolError::Cancelled { ref tool }) if tool == "web_search"),
        "{result:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    canceller.await.unwrap();
}

#[tokio::test]
async fn results_are_deduplicated_by_url() {
    let mock = MockServer::start().await;
    let result = |url: &str, title: &str| json!({"url": url, "title": title, "content": title});
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "query": "dup",
            "results": [
                result("https://example.com/a", "first"),
                result("https://example.com/a/", "trailing slash"),
                result("https://EXAMPLE.com/a#top", "anchor"),
                {"title": "no url"},
                result("not a url", "garbage"),
                result("ftp://example.com/file", "not the web"),
                result("https://example.com/b", "second"),
                result("https://example.com/a?x=1", "another query"),
                result("https://example.com/c", "third"),
            ],
        })))
        .mount(&mock)
        .await;
    let tool = tool(&WebSearchConfig::Searxng {
        url: Some(format!("{}/search", mock.uri())),
        max_results: Some(3),
        timeout_secs: None,
    });
    let out = search(&tool, json!({"query": "dup"})).await.unwrap();
    let urls: Vec<&str> = out["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|result| result["url"].as_str().unwrap())
        .collect();
    assert_eq!(
        urls,
        [
            "https://example.com/a",
            "https://example.com/b",
            "https://example.com/a?x=1"
        ]
    );
    let locations: Vec<&str> = out["sources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|source| source["location"].as_str().unwrap())
        .collect();
    assert_eq!(locations, urls);
    assert_eq!(out["sources"][0]["passage"], "first");
    // An URL already ending in /search is kept as is.
    assert_eq!(only_request(&mock).await.url.path(), "/search");
}

#[tokio::test]
async fn the_configuration_is_read_from_yaml_and_checked_at_start() {
    set_env("SKEIN_TEST_BRAVE_KEY_YAML", "BSA-yaml-key");
    let yaml = "tools:\n  web_search:\n    backend: brave\n    api_key_env: SKEIN_TEST_BRAVE_KEY_YAML\n    max_results: 3\n    timeout_secs: 8\n";
    let config: ServerConfig = serde_saphyr::from_str(yaml).unwrap();
    assert_eq!(
        config.service.tools.web_search,
        Some(WebSearchConfig::Brave {
            url: None,
            api_key_env: Some("SKEIN_TEST_BRAVE_KEY_YAML".to_owned()),
            max_results: Some(3),
            timeout_secs: Some(8),
        })
    );
    let tools = tools::BuiltinTools::new(&config.service.tools).unwrap();
    assert_eq!(
        tools.names().collect::<Vec<_>>(),
        ["calculator", "web_search"]
    );
    let set = tools.select(["web_search"]).unwrap();
    let spec = &set.specs()[0];
    assert!(
        spec.description.contains("3 results"),
        "{}",
        spec.description
    );
    assert!(!format!("{:?}", config.service.tools).contains("BSA-yaml-key"));

    for (yaml, expected) in [
        (
            "tools:\n  web_search:\n    backend: google\n",
            "unknown variant `google`",
        ),
        (
            "tools:\n  web_search:\n    backend: brave\n    api_key: BSA-inline\n",
            "unknown field `api_key`",
        ),
    ] {
        let err = serde_saphyr::from_str::<ServerConfig>(yaml)
            .unwrap_err()
            .to_string();
        assert!(err.contains(expected), "{yaml}: {err}");
    }

    // Checked when the server starts: each refusal says what to fix.
    let start = |web_search: WebSearchConfig| async move {
        match Server::new(with_web_search(web_search)).await {
            Ok(_) => panic!("the server started"),
            Err(err) => err.to_string(),
        }
    };
    assert_eq!(
        start(WebSearchConfig::Searxng {
            url: None,
            max_results: None,
            timeout_secs: None
        })
        .await,
        "web_search with backend searxng needs `url`, the address of a SearxNG instance whose \
         settings.yml lists json under search.formats (e.g. http://localhost:8888)"
    );
    assert_eq!(
        start(tavily(
            "https://api.tavily.com/search".to_owned(),
            "SKEIN_TEST_UNSET_TAVILY_KEY"
        ))
        .await,
        "web_search with backend tavily reads its API key from the environment variable \
         `SKEIN_TEST_UNSET_TAVILY_KEY`, which is not set or empty; set it, or name another \
         variable with `api_key_env`"
    );
    assert!(
        start(WebSearchConfig::Searxng {
            url: Some("http://127.0.0.1:8888".to_owned()),
            max_results: Some(20),
            timeout_secs: None
        })
        .await
        .contains("between 1 and 10")
    );
}

#[tokio::test]
async fn the_echo_model_searches_through_the_server() {
    let mock = searxng_for("rust").await;
    let config = with_web_search(WebSearchConfig::Searxng {
        url: Some(mock.uri()),
        max_results: Some(2),
        timeout_secs: None,
    });
    let server = TestServer::start(config).await;
    let body = json!({
        "model_config": {"model_id": "echo"},
        "input": {"text": r#"{"tool_calls": [{"name": "web_search", "arguments": {"query": "rust"}}]}"#},
        "tools": {"builtin": {"web_search": {"enabled": true}}},
    });
    let events = events(server.post(&body).await).await;
    let names = names(&events);
    assert_eq!(&names[..3], ["response.start", "tool.start", "tool.done"]);
    let start = &events[1].data;
    assert_eq!(start["name"], "web_search");
    assert_eq!(start["input"], json!({"query": "rust"}));
    let done = &events[2].data;
    assert_eq!(done["name"], "web_search");
    assert_eq!(done["error"], Value::Null);
    let output: Value = serde_json::from_str(done["output"].as_str().unwrap()).unwrap();
    assert_eq!(output, found("rust", &[RUST_LANG, RUST_WIKIPEDIA]));
    assert_eq!(terminal(&events, "response.done")["rounds"], 2);
    assert_eq!(only_request(&mock).await.url.path(), "/search");
    server.stop().await;

    // Without a backend the tool is off, and the refusal says how to turn it on.
    let server = TestServer::start(ServerConfig::default()).await;
    let answer = server.post(&body).await;
    assert_eq!(answer.status(), 422);
    let refusal: Value = answer.json().await.unwrap();
    assert_eq!(refusal["code"], "unavailable_tool");
    assert!(
        refusal["message"]
            .as_str()
            .unwrap()
            .contains("tools.web_search"),
        "{refusal}"
    );
    server.stop().await;
}

/// The pages a search found are the sources of its `tool.done` and, each once, of
/// `response.done`: they come with the tool's result, whatever the tool is called.
#[tokio::test]
async fn search_results_are_the_answers_sources() {
    let mock = searxng_for("rust").await;
    let config = with_web_search(WebSearchConfig::Searxng {
        url: Some(mock.uri()),
        max_results: Some(2),
        timeout_secs: None,
    });
    let server = TestServer::start(config).await;
    let call = r#"{"tool_calls": [{"name": "web_search", "arguments": {"query": "rust"}}]}"#;
    let body = json!({
        "model_config": {"model_id": "echo"},
        "input": {"text": call},
        "tools": {"builtin": {"web_search": {"enabled": true}}},
    });
    let events = events(server.post(&body).await).await;
    let expected = found("rust", &[RUST_LANG, RUST_WIKIPEDIA])["sources"].clone();
    assert_eq!(events[2].data["sources"], expected);
    assert_eq!(terminal(&events, "response.done")["sources"], expected);
    server.stop().await;
}
