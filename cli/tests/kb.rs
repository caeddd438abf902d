//! `skein kb` and `skein run --kb`: the workspace's own docs ingested into a knowledge base in
//! the log database, searched from the command line and by the model's tool.

use std::path::Path;

use serde_json::Value;

use crate::support::skein;

fn workspace() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap()
}

#[test]
fn the_workspace_docs_are_searchable_from_the_cli_and_by_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let add = skein(dir.path())
        .args(["kb", "add", "docs"])
        .arg(workspace().join("ARCHITECTURE.md"))
        .arg(workspace().join("SECURITY.md"))
        .output()
        .unwrap();
    assert!(add.status.success(), "{add:?}");
    let said = String::from_utf8(add.stdout).unwrap();
    assert!(said.starts_with("docs: added 2 document(s) in "), "{said}");

    let search = skein(dir.path())
        .args([
            "kb",
            "search",
            "docs",
            "rotating a token",
            "--json",
            "--limit",
            "3",
        ])
        .output()
        .unwrap();
    assert!(search.status.success(), "{search:?}");
    let passages: Vec<Value> = String::from_utf8(search.stdout)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let top = &passages[0];
    let location = top["location"].as_str().unwrap();
    assert!(location.contains("SECURITY.md:"), "{location}");
    // The passage is really at the lines its location names.
    let (path, lines) = location.rsplit_once(':').unwrap();
    let (start, end) = lines.split_once('-').unwrap_or((lines, lines));
    let text = std::fs::read_to_string(path).unwrap();
    let at: Vec<&str> = text
        .lines()
        .skip(start.parse::<usize>().unwrap() - 1)
        .take(end.parse::<usize>().unwrap() - start.parse::<usize>().unwrap() + 1)
        .collect();
    assert_eq!(top["text"].as_str().unwrap().trim_end(), at.join("\n"));
    assert!(
        top["text"]
            .as_str()
            .unwrap()
            .to_lowercase()
            .contains("rotating a token")
    );

    // The model searches the same base with knowledge_base_search.
    let calls = serde_json::json!({"tool_calls": [
        {"name": "knowledge_base_search", "arguments": {"query": "token retires conversations"}},
    ]});
    let run = skein(dir.path())
        .args(["run", "-m", "echo", "--kb", "docs", &calls.to_string()])
        .output()
        .unwrap();
    assert!(run.status.success(), "{run:?}");
    let stdout = String::from_utf8(run.stdout).unwrap();
    let report: Value = serde_json::from_str(&stdout[stdout.find('{').unwrap()..]).unwrap();
    let output: Value =
        serde_json::from_str(report["tool_results"][0]["output"].as_str().unwrap()).unwrap();
    assert_eq!(output["passages"][0]["location"], top["location"]);

    let list = skein(dir.path()).args(["kb", "list"]).output().unwrap();
    assert!(
        String::from_utf8(list.stdout)
            .unwrap()
            .starts_with("docs  2 document(s)")
    );
}

#[test]
fn small_bases_print_scores_that_are_not_zero() {
    let dir = tempfile::tempdir().unwrap();
    let notes = dir.path().join("notes");
    std::fs::create_dir(&notes).unwrap();
    // "token" is in every passage, so BM25 weighs it next to nothing (about 1e-6).
    std::fs::write(
        notes.join("rotate.md"),
        "Rotating a token: revoke the old one.\n",
    )
    .unwrap();
    std::fs::write(notes.join("scope.md"), "A token names its scopes.\n").unwrap();
    let add = skein(dir.path())
        .args(["kb", "add", "notes"])
        .arg(&notes)
        .output()
        .unwrap();
    assert!(add.status.success(), "{add:?}");
    let search = skein(dir.path())
        .args(["kb", "search", "notes", "token"])
        .output()
        .unwrap();
    assert!(search.status.success(), "{search:?}");
    let stdout = String::from_utf8(search.stdout).unwrap();
    let scores: Vec<f64> = stdout
        .lines()
        .filter(|line| !line.starts_with(' '))
        .map(|line| {
            let score = line.rsplit_once(" (").unwrap().1.trim_end_matches(')');
            score.parse().unwrap()
        })
        .collect();
    assert_eq!(scores.len(), 2, "{stdout}");
    assert!(scores.iter().all(|score| *score > 0.0), "{stdout}");
}

#[test]
fn unknown_bases_and_binary_files_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let missing = skein(dir.path())
        .args(["kb", "search", "nothing", "x"])
        .output()
        .unwrap();
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("nothing"));
    let binary = dir.path().join("blob.bin");
    std::fs::write(&binary, [0u8, 159, 146, 150, 0, 1]).unwrap();
    let refused = skein(dir.path())
        .args(["kb", "add", "b"])
        .arg(&binary)
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("blob.bin"));
    let run = skein(dir.path())
        .args(["run", "-m", "echo", "--kb", "nothing", "hi"])
        .output()
        .unwrap();
    assert!(!run.status.success());
    assert!(
        String::from_utf8_lossy(&run.stderr).contains("nothing"),
        "{run:?}"
    );
    // A server whose default base does not exist does not start.
    let serve = skein(dir.path())
        .args(["serve", "--listen", "127.0.0.1:0", "--kb", "nothing"])
        .output()
        .unwrap();
    assert!(!serve.status.success());
    let stderr = String::from_utf8_lossy(&serve.stderr);
    assert!(
        stderr.contains("`knowledge_bases`") && stderr.contains("`nothing`"),
        "{stderr}"
    );
}

#[cfg(unix)]
#[test]
fn links_to_directories_inside_a_walk_are_not_followed() {
    let dir = tempfile::tempdir().unwrap();
    let docs = dir.path().join("docs");
    std::fs::create_dir(&docs).unwrap();
    std::fs::write(docs.join("guide.md"), "Backups run nightly.\n").unwrap();
    // Two links back up the tree: followed, each level would double the walk.
    std::os::unix::fs::symlink("..", docs.join("up")).unwrap();
    std::os::unix::fs::symlink(".", docs.join("here")).unwrap();
    let add = skein(dir.path())
        .args(["kb", "add", "docs"])
        .arg(&docs)
        .timeout(std::time::Duration::from_secs(30))
        .output()
        .unwrap();
    assert!(add.status.success(), "{add:?}");
    assert_eq!(
        String::from_utf8_lossy(&add.stdout).trim(),
        "docs: added 1 document(s) in 1 chunk(s)"
    );
    let stderr = String::from_utf8_lossy(&add.stderr);
    for link in ["up", "here"] {
        assert!(
            stderr.contains(&format!("{link}: a link to a directory")),
            "{stderr}"
        );
    }
}
