//! Every stream of the third-party wire corpus (`tests/fixtures/wire_corpus`: 158 bodies that
//! the real OpenAI Chat Completions and Responses, Anthropic, Gemini and OpenAI-compatible APIs
//! sent, recorded by vercel/ai, anthropic-sdk-python and openai-python) decoded with the public
//! decoders and compared with what the wire says the user reads
//! (`tests/wire_corpus/expected/<folder>/<file>.json`, written by `tests/wire_corpus/fold.py`,
//! an independent fold of the bytes written from the providers' API references, not from
//! Skein's decoders).
//!
//! Each recording is decoded whole, one byte per read and in seeded random reads, and every
//! way must give the expected answer field by field (response id and model, text, reasoning
//! text, blocks and opaque values, tool calls, finish reason, usage) or the expected kind of
//! error. The opaque values a provider needs back (signatures, encrypted content, item ids) must
//! also survive in the collected message through a serde round trip. All mismatches are
//! collected and reported together, one line per recording, field and cause.
#![cfg(all(feature = "openai", feature = "anthropic", feature = "gemini"))]

#[path = "wire_corpus/mod.rs"]
mod corpus;

use std::collections::BTreeSet;

use bytes::Bytes;
use corpus::{
    CORPUS_FILES, Decoder, FIELDS, Outcome, comparable_calls, corpus_dir, corpus_files, decode,
    describe, excerpt, expected_calls, expected_dir, fnv1a64, frame, lost_opaque_values, pieces,
    splits,
};
use serde_json::Value;

#[tokio::test(flavor = "multi_thread")]
async fn every_recorded_stream_decodes_as_the_wire_says() {
    let files = corpus_files();
    let mut problems = Vec::new();
    if files.len() != CORPUS_FILES {
        problems.push(format!(
            "the corpus in {} holds {} recordings, not {CORPUS_FILES}",
            corpus_dir().display(),
            files.len()
        ));
    }
    problems.extend(expected_without_recording(&files));

    let tasks: Vec<_> = files
        .into_iter()
        .map(|(folder, name)| tokio::spawn(check_recording(folder, name)))
        .collect();
    let mut checked = 0;
    for task in tasks {
        problems.extend(task.await.expect("checking a recording does not panic"));
        checked += 1;
    }

    assert!(
        problems.is_empty(),
        "{} problems in {checked} recordings of the wire corpus (regenerate the expected answers \
         with `python3 providers/tests/wire_corpus/fold.py` only when the fold itself changes, \
         never to match Skein):\n{}",
        problems.len(),
        problems.join("\n")
    );
}

/// Expected answers whose recording is gone (a renamed or removed file).
fn expected_without_recording(files: &[(String, String)]) -> Vec<String> {
    let known: BTreeSet<String> = files
        .iter()
        .map(|(folder, name)| format!("{folder}/{name}.json"))
        .collect();
    let mut stale = Vec::new();
    let Ok(folders) = std::fs::read_dir(expected_dir()) else {
        return vec![format!(
            "no expected answers in {}",
            expected_dir().display()
        )];
    };
    for folder in folders.flatten() {
        let folder_name = folder.file_name().to_string_lossy().into_owned();
        for entry in std::fs::read_dir(folder.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            let path = format!("{folder_name}/{}", entry.file_name().to_string_lossy());
            if !known.contains(&path) {
                stale.push(format!("{path}: an expected answer without a recording"));
            }
        }
    }
    stale.sort();
    stale
}

/// Decodes one recording every way and returns its mismatches, one line each.
async fn check_recording(folder: String, name: String) -> Vec<String> {
    let stream = format!("{folder}/{name}");
    let Some(decoder) = Decoder::of_folder(&folder) else {
        return vec![format!(
            "{stream}: no decoder is known for the folder `{folder}`"
        )];
    };
    let expected_path = expected_dir().join(&folder).join(format!("{name}.json"));
    let expected: Value = match std::fs::read(&expected_path) {
        Ok(bytes) => match serde_json::from_slice(&bytes) {
            Ok(value) => value,
            Err(err) => return vec![format!("{stream}: the expected answer is not JSON: {err}")],
        },
        Err(_) => {
            return vec![format!(
                "{stream}: no expected answer ({}); run `python3 providers/tests/wire_corpus/fold.py`",
                expected_path.display()
            )];
        }
    };
    let path = corpus_dir().join(&folder).join(&name);
    let raw = std::fs::read(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
    let body = frame(&name, &raw, decoder);

    let mut problems = Vec::new();
    if expected["decoder"] != decoder.name() {
        problems.push(format!(
            "{stream}: fold.py read it as `{}`, the test as `{}`",
            expected["decoder"],
            decoder.name()
        ));
    }
    if expected["body_bytes"] != body.len() || expected["body_fnv1a64"] != fnv1a64(&body) {
        problems.push(format!(
            "{stream}: framed differently from fold.py ({} bytes, FNV-1a {}; fold.py: {} bytes, {})",
            body.len(),
            fnv1a64(&body),
            expected["body_bytes"],
            expected["body_fnv1a64"].as_str().unwrap_or("?")
        ));
    }

    // (field, what differs, the splits it differs in), in the order first seen.
    let mut found: Vec<(String, String, Vec<String>)> = Vec::new();
    let body = Bytes::from(body);
    let splits = splits();
    for split in &splits {
        let outcome = decode(decoder, pieces(&body, split, &stream)).await;
        for (field, detail) in compare(&expected, &outcome) {
            match found
                .iter_mut()
                .find(|(f, d, _)| *f == field && *d == detail)
            {
                Some(entry) => entry.2.push(split.to_string()),
                None => found.push((field, detail, vec![split.to_string()])),
            }
        }
    }
    for (field, detail, ways) in found {
        let ways = if ways.len() == splits.len() {
            "however the body is split".to_owned()
        } else {
            format!("only when read as: {}", ways.join("; "))
        };
        problems.push(format!("{stream}: {field}: {detail} [{ways}]"));
    }
    problems
}

/// How `outcome` differs from `expected`: (field, description) pairs.
fn compare(expected: &Value, outcome: &Outcome) -> Vec<(String, String)> {
    let json_arguments = expected["arguments_compare"] == "json";
    match (expected.get("error"), outcome) {
        (Some(wire), Outcome::Error(skein, message)) => {
            if wire == skein {
                Vec::new()
            } else {
                vec![(
                    "error".to_owned(),
                    format!("wire {wire} vs Skein {skein} ({message})"),
                )]
            }
        }
        (Some(wire), Outcome::Answer(skein, _)) => vec![(
            "error".to_owned(),
            format!(
                "wire: the stream ends in error {wire}; Skein: an answer ({})",
                summary(skein)
            ),
        )],
        (None, Outcome::Error(skein, message)) => vec![(
            "error".to_owned(),
            format!(
                "wire: an answer ({}); Skein: error {skein}: {message}",
                summary(expected)
            ),
        )],
        (None, Outcome::Answer(skein, response)) => {
            let mut out = Vec::new();
            for pointer in FIELDS {
                let wire = expected.pointer(pointer).unwrap_or(&Value::Null);
                if pointer == "/reasoning/blocks" && wire.is_null() {
                    // Gemini's wire has no reasoning block boundaries.
                    continue;
                }
                let actual = skein.pointer(pointer).unwrap_or(&Value::Null);
                let (wire, actual) = if pointer == "/tool_calls" {
                    (
                        expected_calls(wire, json_arguments),
                        comparable_calls(wire, actual, json_arguments),
                    )
                } else {
                    (wire.clone(), actual.clone())
                };
                if wire != actual {
                    let field = pointer.trim_start_matches('/').replace('/', ".");
                    out.push((field, describe(&wire, &actual)));
                }
            }
            let lost = lost_opaque_values(expected, response);
            if !lost.is_empty() {
                out.push((
                    "round trip".to_owned(),
                    format!(
                        "opaque values missing from the collected message: {}",
                        lost.join(", ")
                    ),
                ));
            }
            out
        }
    }
}

/// A one-line summary of an answer (expected or Skein's, same shape).
fn summary(answer: &Value) -> String {
    let calls: Vec<&str> = answer["tool_calls"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|call| call["name"].as_str())
        .collect();
    format!(
        "text {}, {} reasoning chars, calls {:?}, finish {}",
        excerpt(answer["text"].as_str().unwrap_or_default(), 40),
        answer["reasoning"]["text"]
            .as_str()
            .map_or(0, |text| text.chars().count()),
        calls,
        answer["finish"]
    )
}
