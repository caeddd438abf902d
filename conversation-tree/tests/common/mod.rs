//! The behaviour suite both stores must pass: `tests/sqlite.rs` and `tests/postgres.rs` run
//! every case through [`suite!`] against their [`Harness`].

#![allow(
    dead_code,
    reason = "each test binary uses the parts its backend needs"
)]

pub(crate) mod cases;
pub(crate) mod continuation;
pub(crate) mod edges;
pub(crate) mod labels;
pub(crate) mod metadata;
pub(crate) mod owners;
pub(crate) mod reliability;
pub(crate) mod run_batches;
pub(crate) mod runs;
pub(crate) mod slots;
pub(crate) mod summaries;

use std::sync::Arc;

use conversation_tree::{
    CallOptions, ConversationId, HashOptions, Message, NewResponse, Node, PathMatch, Store,
};

/// A store location of one backend: a fresh file or database per test.
pub(crate) trait Harness: Send + Sync + Sized + 'static {
    /// A new, empty location.
    async fn new() -> Self;
    /// Opens (or reopens) the store at this location.
    async fn open(&self) -> Arc<dyn Store>;
    /// Runs SQL directly against the location, beside the store.
    async fn execute(&self, sql: &str);
    /// SQL that makes every later insert into `table` fail.
    fn failing_insert_trigger(table: &str) -> String;
    /// SQL that makes every later insert of a run's events fail (into the table that holds
    /// them, which each backend names and shapes its own way).
    fn failing_event_insert() -> String;
    /// SQL that makes every later insert of an event of run `run` fail, and no other.
    fn failing_event_insert_for(run: &str) -> String;
    /// What a child process needs to open the same store (see [`open_spec`](Self::open_spec)).
    fn spec(&self) -> String;
    /// Opens the store a [`spec`](Self::spec) names.
    async fn open_spec(spec: &str) -> Arc<dyn Store>;
    /// Waits until `changes` (just subscribed) hears every later change: a PostgreSQL store's
    /// listening connection is opened by its first follower.
    async fn ready_to_follow(_changes: &mut conversation_tree::runs::RunChanges) {}
}

/// Generates one `#[tokio::test]` per case of the suite for `$harness`.
#[macro_export]
macro_rules! suite {
    ($harness:ty) => {
        $crate::suite!(@cases $harness;
            cases::first_call_creates_a_root,
            cases::same_deterministic_messages_reuse_the_root,
            cases::reuse_needs_the_same_model_key_and_policy,
            cases::extension_finds_the_root_and_creates_the_child,
            cases::a_different_answer_branches_and_never_overwrites,
            cases::non_deterministic_duplicates_are_kept_and_listed,
            continuation::other_options_continue_the_same_path,
            continuation::a_different_answer_still_branches_whatever_the_options,
            continuation::stopped_answers_keep_their_status_and_are_never_reused,
            continuation::walking_after_a_node_continues_below_that_node,
            edges::equal_image_bytes_at_different_paths_hash_equal,
            edges::url_only_attachments_match_by_url,
            edges::nested_tool_arguments_match_whatever_their_key_order,
            edges::reasoning_round_trips_and_stripping_it_still_matches,
            edges::unicode_round_trips_exactly,
            edges::a_one_megabyte_prompt_is_stored_and_found,
            cases::store_persists_across_reopen,
            cases::edge_arrays_empty_and_fully_answered,
            cases::latest_node_follows_the_last_call,
            cases::bad_requests_are_typed_errors,
            cases::timings_are_stored_to_the_millisecond,
            reliability::eight_concurrent_tasks_lose_nothing,
            reliability::a_failed_write_leaves_no_half_node,
            reliability::dropped_writes_leave_no_half_node,
            reliability::verify_finds_a_tampered_row,
            owners::claims_record_the_first_owner_and_writes_keep_it,
            owners::concurrent_claims_of_a_new_id_have_one_winner,
            labels::a_label_finds_its_node_and_moves_to_the_latest,
            labels::invalid_labels_and_owners_are_refused_and_nothing_is_written,
            labels::a_new_conversation_is_owned_by_its_first_write_and_writes_keep_owners,
            labels::concurrent_writes_with_one_label_leave_it_on_one_of_them,
            labels::label_node_labels_a_stored_node_and_moves_labels,
            labels::label_node_refuses_unknown_nodes_and_invalid_labels_writing_nothing,
            labels::concurrent_label_moves_leave_the_label_on_one_node,
            summaries::the_deepest_summary_on_a_path_is_found_for_every_node_below_it,
            summaries::a_summary_that_cannot_be_written_leaves_no_node,
            metadata::metadata_is_kept_with_its_node_outside_every_hash,
            metadata::unreadable_metadata_is_a_corrupt_node,
            runs::a_run_is_created_read_and_owner_checked,
            runs::status_moves_only_by_legal_transitions,
            runs::a_paused_run_waits_unheld_and_is_taken_once,
            runs::events_continue_without_gaps_or_duplicates,
            runs::a_failed_batch_leaves_no_event,
            runs::racing_claimants_have_one_winner,
            runs::leases_are_held_renewed_released_and_fenced,
            runs::followers_see_events_status_and_cancels,
            runs::purge_deletes_old_events_and_finished_runs,
            run_batches::one_call_stores_many_runs_and_a_bad_batch_fails_alone,
            run_batches::a_run_whose_events_cannot_be_written_fails_alone,
            run_batches::interleaved_batches_of_many_runs_are_stored_complete_and_in_order,
            slots::racing_claims_across_replicas_win_exactly_the_limit,
            slots::slots_free_on_release_and_on_expiry_and_stay_fenced,
            slots::unusable_slot_names_are_refused,
        );
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn killed_writer_leaves_no_half_node() {
            // The child runs this same test by its libtest name: the module path without the
            // test crate's name.
            let module = module_path!().split_once("::").map_or("", |(_, rest)| rest);
            let name = format!("{module}::killed_writer_leaves_no_half_node");
            $crate::common::reliability::killed_writer_leaves_no_half_node::<$harness>(&name)
                .await;
        }
    };
    (@cases $harness:ty; $($module:ident :: $case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let harness = <$harness as $crate::common::Harness>::new().await;
                $crate::common::$module::$case(&harness).await;
            }
        )*
    };
}

/// Deterministic calls to `echo`: cache hits allowed.
pub(crate) fn deterministic() -> CallOptions {
    CallOptions::new("echo").with_hash(HashOptions::deterministic())
}

/// Sampling calls to `echo`: stored answers are alternatives, not hits.
pub(crate) fn sampling() -> CallOptions {
    CallOptions::new("echo").with_hash(HashOptions {
        temperature: Some(0.9),
        ..Default::default()
    })
}

/// One agent step: find the path, then log `answer` as the model's response to what is
/// pending. Returns the match and the new node.
pub(crate) async fn step(
    store: &dyn Store,
    conversation: &ConversationId,
    messages: &[Message],
    answer: Message,
    options: &CallOptions,
) -> (PathMatch, Node) {
    let path = store
        .find_or_create_path(conversation, messages, options)
        .await
        .expect("find_or_create_path");
    let input = path.pending_input(messages).to_vec();
    let node = store
        .log_response(NewResponse::new(
            conversation.clone(),
            path.parent(),
            input,
            answer,
            options,
        ))
        .await
        .expect("log_response");
    (path, node)
}

/// Every node's hashes recompute, and every stored turn reads back.
pub(crate) async fn assert_consistent(store: &dyn Store) {
    let report = store.verify().await.expect("verify");
    assert!(
        report.is_ok(),
        "verify found problems: {:?}",
        report.problems
    );
    for summary in store
        .conversations(usize::MAX)
        .await
        .expect("conversations")
    {
        for node in store
            .conversation_nodes(&summary.id)
            .await
            .expect("conversation_nodes")
        {
            store.turn(node.id()).await.expect("every turn reads back");
            let path = store.path_to_root(node.id()).await.expect("path_to_root");
            assert_eq!(path.first().map(Node::id), Some(node.id()));
            assert!(path.last().is_some_and(|root| root.parent().is_none()));
        }
    }
}
