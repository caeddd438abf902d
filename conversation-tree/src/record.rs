//! Rows as both backends write and check them: hashing, JSON, validation.

use std::collections::BTreeMap;
use std::time::Duration;

use jiff::Timestamp;
use messages::{ContentPart, Message, Role, transcript};

use crate::{
    ConversationId, HashOptions, NewResponse, Node, NodeId, PathSummary, Problem, ProblemKind,
    ResponseStatus, Result, StoreError, TokenUsage, path_hash, prompt_hash, response_hash,
};

/// A node ready to insert: hashed, serialised, validated. Only its id is missing.
#[derive(Debug)]
pub(crate) struct NodeRow {
    pub(crate) conversation: ConversationId,
    pub(crate) parent: Option<NodeId>,
    pub(crate) prompt_hash: String,
    pub(crate) response_hash: String,
    pub(crate) path_hash: String,
    /// Transcript JSON of the turn's input messages.
    pub(crate) input_json: String,
    /// Transcript JSON of the answer, as a one-message transcript.
    pub(crate) response_json: String,
    pub(crate) model: Option<String>,
    pub(crate) options: HashOptions,
    pub(crate) stop_json: String,
    pub(crate) cache_key: Option<String>,
    pub(crate) usage: Option<TokenUsage>,
    pub(crate) duration: Option<Duration>,
    pub(crate) ttft: Option<Duration>,
    pub(crate) datetime_utc: Timestamp,
    pub(crate) status: ResponseStatus,
    /// The label to move to this node once it has an id.
    pub(crate) label: Option<String>,
    /// The owner of the conversation, should this write create it.
    pub(crate) owner: Option<String>,
    /// The summary the request was sent with, to write with the node.
    pub(crate) summary: Option<SummaryRow>,
    /// The request's metadata; the JSON object of [`NodeRow::metadata_json`] when not empty.
    pub(crate) metadata: BTreeMap<String, String>,
}

/// A [`PathSummary`] ready to insert beside its node.
#[derive(Debug)]
pub(crate) struct SummaryRow {
    pub(crate) replaces: i64,
    pub(crate) replaced_hash: String,
    /// Transcript JSON of what stands in place of the replaced messages.
    pub(crate) messages_json: String,
}

impl SummaryRow {
    fn new(summary: &PathSummary) -> Result<Self> {
        let (replaces, replaced_hash, messages) = summary.stored();
        Ok(SummaryRow {
            replaces: to_i64("replaced messages", replaces as u64)?,
            replaced_hash: replaced_hash.to_owned(),
            messages_json: transcript::to_json(messages),
        })
    }
}

/// A stored summary read back: node `id`'s.
pub(crate) fn summary_from_columns(
    id: NodeId,
    replaces: i64,
    replaced_hash: String,
    messages_json: &str,
) -> Result<PathSummary> {
    let corrupt = |reason: String| StoreError::Corrupt {
        what: format!("the summary of response {id}"),
        reason,
    };
    let replaces = usize::try_from(replaces)
        .map_err(|_| corrupt(format!("it replaces {replaces} messages")))?;
    let messages = transcript::from_json(messages_json)
        .map_err(|err| corrupt(format!("its messages are not a transcript: {err}")))?;
    Ok(PathSummary::from_stored(replaces, replaced_hash, messages))
}

impl NodeRow {
    /// A row for `input` answered by `response`. `parent_path_hash` is the parent's path hash;
    /// [`NodeRow::set_parent_path`] fills it in later when it must be read in the transaction.
    pub(crate) fn new(
        conversation: ConversationId,
        parent: Option<NodeId>,
        input: &[Message],
        response: &Message,
        options: &HashOptions,
        datetime_utc: Timestamp,
    ) -> Result<Self> {
        if let Some(index) = input.iter().position(|message| message.role == Role::Ai) {
            return Err(StoreError::InvalidTurn {
                reason: format!(
                    "input message {index} is an AI message; a turn's input holds system, human \
                     and tool messages, and the AI message is its response"
                ),
            });
        }
        if response.role != Role::Ai {
            return Err(StoreError::InvalidTurn {
                reason: format!(
                    "the response is a {} message; only an AI message can answer a turn",
                    response.role
                ),
            });
        }
        let prompt_hash = prompt_hash(input, options);
        Ok(NodeRow {
            conversation,
            parent,
            path_hash: prompt_hash.clone(),
            prompt_hash,
            response_hash: response_hash(response),
            input_json: transcript::to_json(input),
            response_json: transcript::to_json(std::slice::from_ref(response)),
            model: None,
            options: options.clone(),
            stop_json: stop_json(&options.stop),
            cache_key: None,
            usage: None,
            duration: None,
            ttft: None,
            datetime_utc: micros(datetime_utc),
            status: ResponseStatus::Completed,
            label: None,
            owner: None,
            summary: None,
            metadata: BTreeMap::new(),
        })
    }

    /// A row for a model's answer, as logged by [`Store::log_response`](crate::Store::log_response).
    pub(crate) fn from_response(entry: NewResponse, now: Timestamp) -> Result<Self> {
        if let Some(label) = &entry.label {
            crate::store::check_label(label)?;
        }
        if let Some(owner) = &entry.owner {
            crate::store::check_owner(owner)?;
        }
        let mut row = NodeRow::new(
            entry.conversation,
            entry.parent,
            &entry.input,
            &entry.response,
            &entry.options,
            entry.datetime_utc.unwrap_or(now),
        )?;
        if let Some(usage) = &entry.usage {
            for (what, value) in [
                ("input_tokens", usage.input_tokens),
                ("output_tokens", usage.output_tokens),
                ("cached_input_tokens", usage.cached_input_tokens),
                ("cache_creation_tokens", usage.cache_creation_tokens),
                ("reasoning_tokens", usage.reasoning_tokens),
            ] {
                to_i64(what, value)?;
            }
        }
        for (what, duration) in [
            ("duration in milliseconds", entry.duration),
            ("time to first token in milliseconds", entry.ttft),
        ] {
            if let Some(duration) = duration {
                let millis = u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
                to_i64(what, millis)?;
            }
        }
        row.model = Some(entry.model);
        row.cache_key = entry.cache_key;
        row.usage = entry.usage;
        row.duration = entry.duration;
        row.ttft = entry.ttft;
        row.status = entry.status;
        row.label = entry.label;
        row.owner = entry.owner;
        row.summary = entry.summary.as_ref().map(SummaryRow::new).transpose()?;
        row.metadata = entry.metadata;
        Ok(row)
    }

    /// Sets the parent's path hash, deriving this row's path hash.
    pub(crate) fn set_parent_path(&mut self, parent_path_hash: Option<&str>) {
        self.path_hash = path_hash(parent_path_hash, &self.prompt_hash);
    }

    pub(crate) fn duration_ms(&self) -> Option<i64> {
        self.duration.map(millis)
    }

    pub(crate) fn ttft_ms(&self) -> Option<i64> {
        self.ttft.map(millis)
    }

    /// The metadata column: a JSON object of strings, `None` (NULL) when there is none, as
    /// for rows written before metadata was recorded.
    pub(crate) fn metadata_json(&self) -> Option<String> {
        (!self.metadata.is_empty())
            .then(|| serde_json::to_string(&self.metadata).unwrap_or_default())
    }

    pub(crate) fn into_node(self, id: NodeId) -> Node {
        Node {
            id,
            conversation_id: self.conversation,
            parent: self.parent,
            prompt_hash: self.prompt_hash,
            response_hash: self.response_hash,
            path_hash: self.path_hash,
            model: self.model,
            options: self.options,
            cache_key: self.cache_key,
            usage: self.usage,
            // Stored with millisecond precision: hand back what a reader will see.
            duration: self.duration.map(whole_millis),
            ttft: self.ttft.map(whole_millis),
            datetime_utc: self.datetime_utc,
            status: self.status,
            metadata: self.metadata,
        }
    }
}

/// A duration as stored: whole milliseconds.
fn millis(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

/// A duration cut to what the store keeps of it.
fn whole_millis(duration: Duration) -> Duration {
    Duration::from_millis(duration.as_millis().try_into().unwrap_or(u64::MAX))
}

/// A name for a new conversation: the start of the first human message's text, its
/// whitespace collapsed.
pub(crate) fn conversation_name(input: &[Message]) -> Option<String> {
    const MAX_CHARS: usize = 80;
    let human = input.iter().find(|message| message.role == Role::Human)?;
    let mut name = String::new();
    let mut chars = 0;
    let words = human
        .parts
        .iter()
        .filter_map(ContentPart::as_text)
        .flat_map(str::split_whitespace);
    for word in words {
        if chars > 0 {
            name.push(' ');
            chars += 1;
        }
        for c in word.chars() {
            if chars == MAX_CHARS {
                name.push('…');
                return Some(name);
            }
            name.push(c);
            chars += 1;
        }
    }
    (!name.is_empty()).then_some(name)
}

/// A token count as the databases store it.
pub(crate) fn to_i64(what: &'static str, value: u64) -> Result<i64> {
    i64::try_from(value).map_err(|_| StoreError::OutOfRange { what, value })
}

/// A count read back from the database (never negative when written by this crate).
pub(crate) fn to_u64(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

/// Timestamps are stored with microsecond precision (PostgreSQL's); truncate up front so what
/// a caller gets back from a write equals what a later read returns.
pub(crate) fn micros(at: Timestamp) -> Timestamp {
    Timestamp::from_microsecond(at.as_microsecond()).unwrap_or(at)
}

/// Now, at microsecond precision.
pub(crate) fn now() -> Timestamp {
    micros(Timestamp::now())
}

pub(crate) fn stop_json(stop: &[String]) -> String {
    serde_json::to_string(stop).unwrap_or_else(|_| "[]".to_owned())
}

/// Reads the stored options columns back.
pub(crate) fn options_from_columns(
    temperature: Option<f64>,
    max_tokens: Option<i64>,
    stop_json: &str,
) -> std::result::Result<HashOptions, String> {
    let stop = serde_json::from_str(stop_json)
        .map_err(|err| format!("stop sequences are not a JSON array of strings: {err}"))?;
    let max_tokens = max_tokens
        .map(u32::try_from)
        .transpose()
        .map_err(|_| "max_tokens is out of range".to_owned())?;
    Ok(HashOptions {
        temperature,
        max_tokens,
        stop,
    })
}

/// Usage columns read back: all absent, or all present.
pub(crate) fn usage_from_columns(columns: [Option<i64>; 5]) -> Option<TokenUsage> {
    let [input, output, cached, creation, reasoning] = columns;
    Some(TokenUsage {
        input_tokens: to_u64(input?),
        output_tokens: to_u64(output?),
        cached_input_tokens: to_u64(cached?),
        cache_creation_tokens: to_u64(creation?),
        reasoning_tokens: to_u64(reasoning?),
    })
}

/// A stored turn read back.
pub(crate) fn turn_from_json(
    id: NodeId,
    input_json: &str,
    response_json: &str,
) -> Result<crate::Turn> {
    let corrupt = |part: &str, err: transcript::TranscriptError| StoreError::Corrupt {
        what: format!("response {id}"),
        reason: format!("its {part} is not a transcript: {err}"),
    };
    let input = transcript::from_json(input_json).map_err(|err| corrupt("input", err))?;
    let mut response =
        transcript::from_json(response_json).map_err(|err| corrupt("response", err))?;
    match (response.pop(), response.is_empty()) {
        (Some(message), true) => Ok(crate::Turn {
            input,
            response: message,
        }),
        _ => Err(StoreError::Corrupt {
            what: format!("response {id}"),
            reason: "its response is not exactly one message".to_owned(),
        }),
    }
}

/// A node's columns as read, before the checks that can fail without the database's help.
pub(crate) struct NodeColumns {
    pub(crate) id: i64,
    pub(crate) conversation: String,
    pub(crate) parent: Option<i64>,
    /// Prompt, response and path hash.
    pub(crate) hashes: [String; 3],
    pub(crate) model: Option<String>,
    pub(crate) temperature: Option<f64>,
    pub(crate) max_tokens: Option<i64>,
    pub(crate) stop_json: String,
    pub(crate) cache_key: Option<String>,
    /// Input, output, cached input, cache creation and reasoning tokens.
    pub(crate) usage: [Option<i64>; 5],
    pub(crate) duration_ms: Option<i64>,
    pub(crate) ttft_ms: Option<i64>,
    /// Parsed by the backend (SQLite stores text, PostgreSQL a timestamp).
    pub(crate) datetime_utc: std::result::Result<Timestamp, String>,
    pub(crate) status: String,
    /// JSON object of strings; NULL when the request had no metadata.
    pub(crate) metadata_json: Option<String>,
}

impl NodeColumns {
    pub(crate) fn into_node(self) -> Result<Node> {
        let id = NodeId::from_db(self.id);
        let corrupt = |reason: String| StoreError::Corrupt {
            what: format!("response {id}"),
            reason,
        };
        let [prompt_hash, response_hash, path_hash] = self.hashes;
        Ok(Node {
            id,
            conversation_id: ConversationId::new(self.conversation)
                .map_err(|err| corrupt(err.to_string()))?,
            parent: self.parent.map(NodeId::from_db),
            prompt_hash,
            response_hash,
            path_hash,
            model: self.model,
            options: options_from_columns(self.temperature, self.max_tokens, &self.stop_json)
                .map_err(corrupt)?,
            cache_key: self.cache_key,
            usage: usage_from_columns(self.usage),
            duration: self.duration_ms.map(|ms| Duration::from_millis(to_u64(ms))),
            ttft: self.ttft_ms.map(|ms| Duration::from_millis(to_u64(ms))),
            datetime_utc: self.datetime_utc.map_err(corrupt)?,
            status: self
                .status
                .parse::<ResponseStatus>()
                .map_err(|err| corrupt(err.to_string()))?,
            metadata: self
                .metadata_json
                .as_deref()
                .map(serde_json::from_str)
                .transpose()
                .map_err(|err| corrupt(format!("its metadata is not an object of strings: {err}")))?
                .unwrap_or_default(),
        })
    }
}

/// One stored node with what [`check`] needs to recompute its hashes.
pub(crate) struct StoredRow {
    pub(crate) id: NodeId,
    pub(crate) conversation: String,
    pub(crate) prompt_hash: String,
    pub(crate) response_hash: String,
    pub(crate) path_hash: String,
    pub(crate) input_json: String,
    pub(crate) response_json: String,
    pub(crate) options: std::result::Result<HashOptions, String>,
    /// The parent's id, conversation and stored path hash.
    pub(crate) parent: Option<(NodeId, String, String)>,
}

/// Recomputes a stored node's hashes. The parent's stored path hash is trusted here because
/// the parent's own row is checked too: together they check every path from its root.
pub(crate) fn check(row: StoredRow) -> Option<Problem> {
    let problem = |kind| Some(Problem { node: row.id, kind });
    let turn = match turn_from_json(row.id, &row.input_json, &row.response_json) {
        Ok(turn) => turn,
        Err(err) => {
            return problem(ProblemKind::Unreadable {
                reason: err.to_string(),
            });
        }
    };
    let options = match &row.options {
        Ok(options) => options,
        Err(reason) => {
            return problem(ProblemKind::Unreadable {
                reason: reason.clone(),
            });
        }
    };
    if let Some((parent, conversation, _)) = &row.parent
        && *conversation != row.conversation
    {
        return problem(ProblemKind::ParentElsewhere { parent: *parent });
    }
    let computed = prompt_hash(&turn.input, options);
    if computed != row.prompt_hash {
        return problem(ProblemKind::PromptHash {
            stored: row.prompt_hash,
            computed,
        });
    }
    let computed = response_hash(&turn.response);
    if computed != row.response_hash {
        return problem(ProblemKind::ResponseHash {
            stored: row.response_hash,
            computed,
        });
    }
    let parent_path = row.parent.as_ref().map(|(_, _, path)| path.as_str());
    let computed = path_hash(parent_path, &row.prompt_hash);
    if computed != row.path_hash {
        return problem(ProblemKind::PathHash {
            stored: row.path_hash,
            computed,
        });
    }
    None
}
