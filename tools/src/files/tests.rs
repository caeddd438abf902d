use std::fs;

use serde_json::{Value, json};
use toolchain::{DynTool, ExecutionContext, ToolError};

use super::*;

/// A root with `notes.txt`, `src/lib.rs` and, beside the root, `outside/secret.txt`.
struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
    outside: PathBuf,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let outside = dir.path().join("outside");
    fs::create_dir_all(root.join("src")).unwrap();
    fs::create_dir_all(&outside).unwrap();
    fs::write(root.join("notes.txt"), "hello notes\n").unwrap();
    fs::write(root.join("src/lib.rs"), "pub fn f() {}\n").unwrap();
    fs::write(outside.join("secret.txt"), "TOP SECRET").unwrap();
    Fixture {
        _dir: dir,
        root,
        outside,
    }
}

async fn read(root: &FileRoot, path: &str) -> Result<Value, ToolError> {
    let tool = DynTool::new(ReadFile::new(root.clone())).unwrap();
    let args = json!({ "path": path }).to_string();
    tool.call_json_text(&ExecutionContext::new(), &args)
        .await
        .map(|out| out.text)
}

async fn list(root: &FileRoot, args: Value) -> Result<Value, ToolError> {
    let tool = DynTool::new(ListFiles::new(root.clone())).unwrap();
    tool.call_json_text(&ExecutionContext::new(), &args.to_string())
        .await
        .map(|out| out.text)
}

fn message(result: Result<Value, ToolError>) -> String {
    match result {
        Ok(value) => panic!("expected an error, got {value}"),
        Err(err) => err.to_string(),
    }
}

#[tokio::test]
async fn reads_files_inside_the_root() {
    let fx = fixture();
    let root = FileRoot::new(&fx.root).unwrap();
    assert_eq!(
        read(&root, "notes.txt").await.unwrap(),
        json!({"path": "notes.txt", "size": 12, "content": "hello notes\n", "truncated": false})
    );
    let nested = read(&root, "./src/lib.rs").await.unwrap();
    assert_eq!(nested["path"], "src/lib.rs");
    assert_eq!(nested["content"], "pub fn f() {}\n");
}

#[tokio::test]
async fn parent_directory_components_are_refused() {
    let fx = fixture();
    let root = FileRoot::new(&fx.root).unwrap();
    for path in [
        "../outside/secret.txt",
        "src/../../outside/secret.txt",
        "..",
    ] {
        let err = message(read(&root, path).await);
        assert!(err.contains("contains `..`"), "{path}: {err}");
    }
    // Even a `..` that would stay inside is refused: no path arithmetic to get wrong.
    let err = message(read(&root, "src/../notes.txt").await);
    assert!(err.contains("contains `..`"), "{err}");
}

#[tokio::test]
async fn absolute_paths_are_refused() {
    let fx = fixture();
    let root = FileRoot::new(&fx.root).unwrap();
    let secret = fx.outside.join("secret.txt");
    for path in [secret.to_str().unwrap(), "/etc/passwd"] {
        let err = message(read(&root, path).await);
        assert!(err.contains("is absolute"), "{path}: {err}");
    }
    let err = message(list(&root, json!({"path": "/"})).await);
    assert!(err.contains("is absolute"), "{err}");
}

#[cfg(unix)]
#[tokio::test]
async fn symlinks_leading_outside_are_refused() {
    let fx = fixture();
    std::os::unix::fs::symlink(fx.outside.join("secret.txt"), fx.root.join("file-link")).unwrap();
    std::os::unix::fs::symlink(&fx.outside, fx.root.join("dir-link")).unwrap();
    std::os::unix::fs::symlink(fx.root.join("notes.txt"), fx.root.join("inside-link")).unwrap();
    let root = FileRoot::new(&fx.root).unwrap();

    for path in ["file-link", "dir-link/secret.txt"] {
        let err = message(read(&root, path).await);
        assert!(err.contains("leads outside the root"), "{path}: {err}");
    }
    let err = message(list(&root, json!({"path": "dir-link"})).await);
    assert!(err.contains("leads outside the root"), "{err}");

    // A link that stays inside is fine.
    let inside = read(&root, "inside-link").await.unwrap();
    assert_eq!(inside["content"], "hello notes\n");
    assert_eq!(inside["path"], "notes.txt");

    // Listing shows links as links and never enters them.
    let listing = list(&root, json!({"recursive": true})).await.unwrap();
    let entries: Vec<(String, String)> = listing["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["path"].as_str().unwrap().to_owned(),
                e["kind"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert!(
        entries.contains(&("dir-link".into(), "symlink".into())),
        "{entries:?}"
    );
    assert!(
        !entries.iter().any(|(path, _)| path.contains("secret")),
        "{entries:?}"
    );
}

#[cfg(unix)]
#[tokio::test]
async fn a_root_reached_through_a_link_still_confines() {
    let fx = fixture();
    let link = fx.root.parent().unwrap().join("root-link");
    std::os::unix::fs::symlink(&fx.root, &link).unwrap();
    let root = FileRoot::new(&link).unwrap();
    assert_eq!(
        read(&root, "notes.txt").await.unwrap()["content"],
        "hello notes\n"
    );
    let err = message(read(&root, "../outside/secret.txt").await);
    assert!(err.contains("contains `..`"), "{err}");
}

#[tokio::test]
async fn listing_is_sorted_and_bounded() {
    let fx = fixture();
    let root = FileRoot::new(&fx.root).unwrap();
    assert_eq!(
        list(&root, json!({})).await.unwrap(),
        json!({
            "path": ".",
            "entries": [
                {"path": "notes.txt", "kind": "file", "size": 12},
                {"path": "src", "kind": "dir"},
            ],
            "truncated": false,
        })
    );
    let recursive = list(&root, json!({"recursive": true})).await.unwrap();
    assert_eq!(recursive["entries"].as_array().unwrap().len(), 3);
    assert_eq!(recursive["entries"][2]["path"], "src/lib.rs");

    let small = FileRoot::with_limits(&fx.root, 1024, 1).unwrap();
    let cut = list(&small, json!({"recursive": true})).await.unwrap();
    assert_eq!(cut["entries"].as_array().unwrap().len(), 1);
    assert_eq!(cut["truncated"], true);
}

#[tokio::test]
async fn big_and_binary_files() {
    let fx = fixture();
    fs::write(fx.root.join("big.txt"), "é".repeat(10)).unwrap(); // 20 bytes
    fs::write(fx.root.join("blob.bin"), [0xff, 0xfe, 0x00, 0x01]).unwrap();
    let root = FileRoot::with_limits(&fx.root, 5, 100).unwrap();
    // 5 bytes would cut the third `é` in half: the half is dropped.
    assert_eq!(
        read(&root, "big.txt").await.unwrap(),
        json!({"path": "big.txt", "size": 20, "content": "éé", "truncated": true})
    );
    let err = message(read(&root, "blob.bin").await);
    assert!(err.contains("not a UTF-8 text file"), "{err}");
    let err = message(read(&root, "src").await);
    assert!(err.contains("is not a file"), "{err}");
    let err = message(read(&root, "missing.txt").await);
    assert!(err.contains("no such file"), "{err}");
}

#[test]
fn the_root_must_be_a_directory() {
    let fx = fixture();
    let err = FileRoot::new(fx.root.join("notes.txt")).unwrap_err();
    assert!(
        err.to_string().contains("give an existing directory"),
        "{err}"
    );
    assert!(FileRoot::new(fx.root.join("nope")).is_err());
}
