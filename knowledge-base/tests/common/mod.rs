//! The behaviour suite both backends must pass: `tests/sqlite.rs` and `tests/postgres.rs` run
//! every case through [`suite!`] with a fresh store of their own.

#![allow(dead_code, reason = "each backend module uses the parts it needs")]

use std::path::{Path, PathBuf};

use knowledge_base::{Chunker, Document, KbError, KnowledgeStore, Passage};

/// Generates one `#[tokio::test]` per case of the suite; `$open` is an async fn returning a
/// fresh [`KnowledgeStore`] and a guard to keep while it is used (its temporary directory).
#[macro_export]
macro_rules! suite {
    ($open:path) => {
        $crate::suite!(@cases $open;
            workspace_docs_are_found_at_the_right_lines,
            re_adding_is_idempotent,
            re_adding_a_location_replaces_its_chunks,
            hostile_queries_are_words_never_errors,
            unknown_bases_list_the_known_ones,
            list_and_remove,
            results_are_deduplicated,
            stop_words_match_no_passage,
            limits_are_respected,
            invalid_names_and_documents_are_refused_and_nothing_is_written,
            paged_documents_report_pages,
            concurrent_adds_of_one_base_leave_one_copy,
        );
    };
    (@cases $open:path; $($case:ident,)*) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let (store, _guard) = $open().await;
                $crate::common::$case(store).await;
            }
        )*
    };
}

/// The workspace's root.
pub(crate) fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the crate is in the workspace")
        .to_path_buf()
}

/// The workspace's own documentation: README, ARCHITECTURE, SECURITY and every crate's
/// COMPAT.md, located by their paths relative to the workspace root.
pub(crate) fn workspace_docs() -> Vec<Document> {
    let root = workspace();
    let mut paths = vec![
        PathBuf::from("README.md"),
        PathBuf::from("ARCHITECTURE.md"),
        PathBuf::from("SECURITY.md"),
    ];
    let mut compat: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let relative = PathBuf::from(entry.file_name()).join("COMPAT.md");
            root.join(&relative).is_file().then_some(relative)
        })
        .collect();
    compat.sort();
    assert!(!compat.is_empty(), "the workspace has COMPAT.md files");
    paths.extend(compat);
    paths
        .into_iter()
        .map(|relative| {
            let mut document = Document::from_file(root.join(&relative)).unwrap();
            document.location = relative.display().to_string();
            document
        })
        .collect()
}

/// Asserts that `passage` is exactly lines `span.start..=span.end` of its file.
pub(crate) fn assert_at_its_lines(passage: &Passage) {
    let text = std::fs::read_to_string(workspace().join(&passage.document)).unwrap();
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let start = passage.span.start as usize;
    let end = passage.span.end as usize;
    assert!(
        1 <= start && start <= end && end <= lines.len(),
        "{}",
        passage.location
    );
    assert_eq!(
        lines[start - 1..end].concat(),
        passage.text,
        "the text of {} is not at those lines",
        passage.location
    );
    let expected = if start == end {
        format!("{}:{start}", passage.document)
    } else {
        format!("{}:{start}-{end}", passage.document)
    };
    assert_eq!(passage.location, expected);
}

pub(crate) async fn workspace_docs_are_found_at_the_right_lines(store: KnowledgeStore) {
    let documents = workspace_docs();
    let count = documents.len();
    let report = store.add("docs", documents).await.unwrap();
    assert_eq!(report.documents, count);
    assert!(report.chunks > count, "{report:?}");
    assert!(report.empty.is_empty());

    for term in ["previous_response_id", "WAL", "loopback", "schemathesis"] {
        let passages = store.search(&["docs"], term, 5).await.unwrap();
        assert!(!passages.is_empty(), "nothing found for {term}");
        let top = &passages[0];
        // The right file: one whose text has the term, and the passage has it.
        let holds = |text: &str| text.to_lowercase().contains(&term.to_lowercase());
        assert!(
            holds(&top.text),
            "the top passage for {term} lacks it: {top:?}"
        );
        let file = std::fs::read_to_string(workspace().join(&top.document)).unwrap();
        assert!(holds(&file));
        for passage in &passages {
            assert_eq!(passage.base, "docs");
            assert_at_its_lines(passage);
        }
        let scores: Vec<f64> = passages.iter().map(|passage| passage.score).collect();
        assert!(
            scores.windows(2).all(|pair| pair[0] >= pair[1]),
            "not best first: {scores:?}"
        );
    }

    // A term only ARCHITECTURE.md holds: its top passage is there, titled by its heading.
    let wal = store.search(&["docs"], "WAL", 5).await.unwrap();
    let wal_files: Vec<String> = workspace_docs()
        .into_iter()
        .filter(|document| document.text.contains("WAL"))
        .map(|document| document.location)
        .collect();
    assert!(wal_files.contains(&wal[0].document), "{wal_files:?}");
    if wal_files == ["ARCHITECTURE.md"] {
        assert_eq!(wal[0].title, "Architecture");
    }
}

pub(crate) async fn re_adding_is_idempotent(store: KnowledgeStore) {
    let first = store.add("docs", workspace_docs()).await.unwrap();
    let before = store.list().await.unwrap();
    let found_before = store.search(&["docs"], "loopback", 10).await.unwrap();
    let second = store.add("docs", workspace_docs()).await.unwrap();
    assert_eq!(second.replaced, second.documents);
    assert_eq!(first.chunks, second.chunks);
    assert_eq!(store.list().await.unwrap(), before);
    let found_after = store.search(&["docs"], "loopback", 10).await.unwrap();
    let locations = |passages: &[Passage]| {
        passages
            .iter()
            .map(|passage| passage.location.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(locations(&found_before), locations(&found_after));
}

pub(crate) async fn re_adding_a_location_replaces_its_chunks(store: KnowledgeStore) {
    let old = Document::new("Notes", "notes.md", "The password rotation is quarterly.\n");
    let report = store.add("notes", vec![old]).await.unwrap();
    assert_eq!(
        (report.documents, report.chunks, report.replaced),
        (1, 1, 0)
    );
    let other = Document::new("Other", "other.md", "Quarterly reviews happen too.\n");
    store.add("notes", vec![other]).await.unwrap();

    let new = Document::new("Notes", "notes.md", "Keys rotate monthly.\n");
    let report = store.add("notes", vec![new]).await.unwrap();
    assert_eq!(
        (report.documents, report.chunks, report.replaced),
        (1, 1, 1)
    );
    let quarterly = store.search(&["notes"], "quarterly", 10).await.unwrap();
    assert_eq!(quarterly.len(), 1);
    assert_eq!(quarterly[0].location, "other.md:1");
    let monthly = store.search(&["notes"], "monthly", 10).await.unwrap();
    assert_eq!(monthly.len(), 1);
    assert_eq!(monthly[0].text, "Keys rotate monthly.\n");
    let summary = store.list().await.unwrap();
    assert_eq!((summary[0].documents, summary[0].chunks), (2, 2));

    // The same location twice in one call keeps the last.
    let twice = vec![
        Document::new("A", "a.md", "first version\n"),
        Document::new("A", "a.md", "second version\n"),
    ];
    let report = store.add("notes", twice).await.unwrap();
    assert_eq!((report.documents, report.chunks), (1, 1));
    assert!(
        store
            .search(&["notes"], "first", 5)
            .await
            .unwrap()
            .is_empty()
    );
}

pub(crate) async fn hostile_queries_are_words_never_errors(store: KnowledgeStore) {
    store.add("docs", workspace_docs()).await.unwrap();
    let long = "loopback ".repeat(2000);
    let hostile = [
        "",
        "   ",
        "\"",
        "\"unbalanced",
        "*",
        "wal*",
        "-",
        "-wal",
        "NEAR(loopback server)",
        "NEAR",
        "loopback OR",
        "AND",
        "NOT loopback",
        "(((",
        ")",
        "'; DROP TABLE kb_chunks; --",
        "title:wal",
        "body:loopback",
        "^wal",
        "{a b}",
        "a + b & c | d ! e <-> f",
        "\u{0345}\u{0301}",
        "🙂 \u{0}",
        "loopback:*",
        "'",
        "\\",
        long.as_str(),
    ];
    for query in hostile {
        let result = store.search(&["docs"], query, 5).await;
        assert!(result.is_ok(), "{query:?}: {result:?}");
    }
    // Operators are words: NEAR finds passages that hold "near"; quotes are ignored.
    let quoted = store.search(&["docs"], "\"loopback", 5).await.unwrap();
    assert!(!quoted.is_empty());
    assert!(quoted[0].text.to_lowercase().contains("loopback"));
    // Nothing was dropped.
    assert!(
        !store
            .search(&["docs"], "loopback", 5)
            .await
            .unwrap()
            .is_empty()
    );
}

pub(crate) async fn unknown_bases_list_the_known_ones(store: KnowledgeStore) {
    let error = store.search(&["docs"], "x", 5).await.unwrap_err();
    assert!(
        matches!(&error, KbError::UnknownBase { name, known } if name == "docs" && known.is_empty()),
        "{error:?}"
    );
    assert!(error.to_string().contains("skein kb add"), "{error}");
    store
        .add("docs", vec![Document::new("t", "a.md", "alpha\n")])
        .await
        .unwrap();
    store
        .add("notes", vec![Document::new("t", "b.md", "beta\n")])
        .await
        .unwrap();
    let error = store
        .search(&["docs", "dcos"], "alpha", 5)
        .await
        .unwrap_err();
    assert!(
        matches!(&error, KbError::UnknownBase { name, known } if name == "dcos" && known == &["docs", "notes"]),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        "there is no knowledge base named `dcos`; the knowledge bases are `docs`, `notes` \
         (`skein kb add NAME FILES…` creates one)"
    );
    assert!(matches!(
        store.remove("dcos").await,
        Err(KbError::UnknownBase { .. })
    ));
    assert!(matches!(
        store.search::<&str>(&[], "alpha", 5).await,
        Err(KbError::NoBases)
    ));
}

pub(crate) async fn list_and_remove(store: KnowledgeStore) {
    assert!(store.list().await.unwrap().is_empty());
    store.add("docs", workspace_docs()).await.unwrap();
    store
        .add(
            "notes",
            vec![
                Document::new("A", "a.md", "loopback notes\n"),
                Document::new("B", "b.md", "more\n"),
            ],
        )
        .await
        .unwrap();
    let list = store.list().await.unwrap();
    let names: Vec<&str> = list.iter().map(|base| base.name.as_str()).collect();
    assert_eq!(names, ["docs", "notes"]);
    assert_eq!((list[1].documents, list[1].chunks), (2, 2));
    let removed = store.remove("docs").await.unwrap();
    assert_eq!(removed, list[0]);
    assert_eq!(store.list().await.unwrap(), [list[1].clone()]);
    assert!(matches!(
        store.search(&["docs"], "loopback", 5).await,
        Err(KbError::UnknownBase { .. })
    ));
    // The other base is intact, and a removed name can be used again.
    let found = store.search(&["notes"], "loopback", 5).await.unwrap();
    assert_eq!(found.len(), 1);
    store
        .add("docs", vec![Document::new("C", "c.md", "loopback again\n")])
        .await
        .unwrap();
    let both = store
        .search(&["docs", "notes"], "loopback", 5)
        .await
        .unwrap();
    assert_eq!(both.len(), 2);
}

pub(crate) async fn results_are_deduplicated(store: KnowledgeStore) {
    // One document in two bases: each location is returned once.
    let document = Document::new("Same", "same.md", "the zebra crossing\n");
    store.add("one", vec![document.clone()]).await.unwrap();
    store.add("two", vec![document]).await.unwrap();
    let found = store.search(&["one", "two"], "zebra", 10).await.unwrap();
    assert_eq!(found.len(), 1, "{found:?}");

    // The same text at two locations: once.
    let copies = vec![
        Document::new("A", "a.md", "the okapi   grazes\n"),
        Document::new("B", "b.md", "the okapi grazes\n"),
    ];
    store.add("one", copies).await.unwrap();
    let found = store.search(&["one"], "okapi", 10).await.unwrap();
    assert_eq!(found.len(), 1, "{found:?}");

    // A match in the overlap of two consecutive chunks is one passage.
    let mut text = String::new();
    for line in 1..=40 {
        if line == 20 {
            text.push_str("the narwhal line\n");
        } else {
            text.push_str(&format!("filler line number {line}\n"));
        }
    }
    let chunker = Chunker::new(200, 80);
    let chunks = chunker.chunks(&text);
    let holding = chunks
        .iter()
        .filter(|chunk| chunk.text(&text).contains("narwhal"))
        .count();
    assert!(holding >= 2, "the test needs the line in an overlap");
    store
        .add_with_chunker("one", vec![Document::new("Long", "long.md", text)], chunker)
        .await
        .unwrap();
    let found = store.search(&["one"], "narwhal", 10).await.unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
}

pub(crate) async fn stop_words_match_no_passage(store: KnowledgeStore) {
    let documents = vec![
        Document::new(
            "Tokens",
            "tokens.md",
            "Rotating tokens: revoke the old one first.\n",
        ),
        Document::new("Cats", "cats.md", "a cat sat on a mat in the sun\n"),
    ];
    store.add("notes", documents).await.unwrap();
    let found = store
        .search(&["notes"], "rotating a token", 10)
        .await
        .unwrap();
    let locations: Vec<&str> = found
        .iter()
        .map(|passage| passage.document.as_str())
        .collect();
    assert_eq!(locations, ["tokens.md"], "{found:?}");
    // A query of stop words only has nothing to look for.
    assert!(
        store
            .search(&["notes"], "a the on in", 10)
            .await
            .unwrap()
            .is_empty()
    );
}

pub(crate) async fn limits_are_respected(store: KnowledgeStore) {
    store.add("docs", workspace_docs()).await.unwrap();
    // "skein" is in most passages (and is no stop word).
    assert!(
        store
            .search(&["docs"], "skein", 0)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(store.search(&["docs"], "skein", 1).await.unwrap().len(), 1);
    assert_eq!(store.search(&["docs"], "skein", 7).await.unwrap().len(), 7);
    let many = store.search(&["docs"], "skein", 10_000).await.unwrap();
    assert!(many.len() <= knowledge_base::MAX_SEARCH_LIMIT);
    assert!(many.len() > 20);
}

pub(crate) async fn invalid_names_and_documents_are_refused_and_nothing_is_written(
    store: KnowledgeStore,
) {
    let documents = vec![Document::new("t", "a.md", "alpha\n")];
    for name in ["", "a b", "../x", "-x", "ü"] {
        let error = store.add(name, documents.clone()).await.unwrap_err();
        assert!(
            matches!(error, KbError::InvalidBaseName { .. }),
            "{name:?}: {error:?}"
        );
    }
    let mixed = vec![
        Document::new("t", "a.md", "alpha\n"),
        Document::new("t", " ", "beta\n"),
    ];
    let error = store.add("docs", mixed).await.unwrap_err();
    assert!(
        matches!(error, KbError::InvalidDocument { .. }),
        "{error:?}"
    );
    assert!(store.list().await.unwrap().is_empty());

    // Empty documents are stored and reported, without chunks.
    let report = store
        .add("docs", vec![Document::new("t", "empty.md", "\n  \n")])
        .await
        .unwrap();
    assert_eq!((report.documents, report.chunks), (1, 0));
    assert_eq!(report.empty, ["empty.md"]);
}

pub(crate) async fn paged_documents_report_pages(store: KnowledgeStore) {
    let manual = Document::from_pages(
        "Manual",
        "manual.pdf",
        [
            "Introduction to the pump.\n",
            "Maintenance: replace the impeller yearly.\n",
        ],
    );
    store
        .add_with_chunker("manuals", vec![manual], Chunker::new(50, 0))
        .await
        .unwrap();
    let found = store.search(&["manuals"], "impeller", 5).await.unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].location, "manual.pdf:p2");
    assert_eq!(found[0].text, "Maintenance: replace the impeller yearly.\n");
}

pub(crate) async fn concurrent_adds_of_one_base_leave_one_copy(store: KnowledgeStore) {
    let documents = workspace_docs();
    let expected = documents.len();
    let mut tasks = Vec::new();
    for _ in 0..4 {
        let store = store.clone();
        let documents = documents.clone();
        tasks.push(tokio::spawn(
            async move { store.add("docs", documents).await },
        ));
    }
    let mut chunks = Vec::new();
    for task in tasks {
        chunks.push(task.await.unwrap().unwrap().chunks);
    }
    let list = store.list().await.unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!(list[0].documents, expected);
    assert_eq!(list[0].chunks, chunks[0]);
    let found = store.search(&["docs"], "loopback", 20).await.unwrap();
    let mut locations: Vec<&str> = found.iter().map(|p| p.location.as_str()).collect();
    let count = locations.len();
    locations.sort_unstable();
    locations.dedup();
    assert_eq!(locations.len(), count);
}
