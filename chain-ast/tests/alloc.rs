//! Allocation bounds, measured with a counting global allocator: building a chain copies the
//! messages once (plus the tree's own small vectors), validating copies nothing, flattening is
//! exactly one copy.
// A global allocator needs `unsafe impl GlobalAlloc`; it only counts and forwards to `System`.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use chain_ast::ChainAst;
use messages::{Message, ToolCall};

struct Counting;

thread_local! {
    /// Bytes requested by this thread (allocations and reallocations, never decreased).
    static BYTES: Cell<usize> = const { Cell::new(0) };
}

fn count(bytes: usize) {
    // `try_with`: the allocator may run while the thread-local is being torn down.
    let _ = BYTES.try_with(|total| total.set(total.get() + bytes));
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so `System`'s
// guarantees hold; the counting touches only a const-initialised thread-local `Cell`, which does
// not allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        // SAFETY: forwarded unchanged.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        // SAFETY: forwarded unchanged.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size);
        // SAFETY: forwarded unchanged.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Bytes `f` allocates on this thread, and its result.
fn allocated<R>(f: impl FnOnce() -> R) -> (R, usize) {
    let before = BYTES.with(Cell::get);
    let result = f();
    (result, BYTES.with(Cell::get) - before)
}

/// A valid chain of about `messages` messages: sections of a question, a tool round with two
/// calls and an answer (7 messages each).
fn chain(messages: usize) -> Vec<Message> {
    let mut chain = vec![Message::system("You are a helpful assistant.")];
    for section in 0..messages / 7 {
        let (a, b) = (format!("call_{section}_a"), format!("call_{section}_b"));
        chain.push(Message::human(format!(
            "Question {section}: what is the weather?"
        )));
        chain.push(Message::ai_tool_calls(
            Some("Checking.".into()),
            vec![
                ToolCall::new(&a, "get_weather", r#"{"city": "Paris"}"#),
                ToolCall::new(&b, "get_time", r#"{"city": "Paris"}"#),
            ],
        ));
        chain.push(Message::tool_response(
            &a,
            "get_weather",
            "Sunny, 24°C, light wind from the west.",
        ));
        chain.push(Message::tool_response(&b, "get_time", "15:42"));
        chain.push(Message::ai("It is sunny and 24°C in Paris at 15:42."));
        chain.push(Message::ai("Anything else?"));
        chain.push(Message::ai("I am here."));
    }
    chain
}

#[test]
fn construction_allocates_one_copy_of_the_messages() {
    for size in [10_000, 100_000] {
        let chain = chain(size);
        let (copy, copy_bytes) = allocated(|| chain.to_vec());
        drop(copy);

        let (ast, build_bytes) = allocated(|| ChainAst::new(&chain, false));
        let ast = ast.expect("valid");
        // One copy of the messages plus the tree's vectors (sections, body pairs, tool lists):
        // under 1.5 copies, so never two.
        let ratio = build_bytes as f64 / copy_bytes as f64;
        eprintln!("{size} messages: copy {copy_bytes} B, build {build_bytes} B ({ratio:.2}x)");
        assert!(build_bytes >= copy_bytes, "the messages are copied once");
        assert!(
            ratio < 1.5,
            "{size} messages: construction allocated {ratio:.2} copies"
        );

        // Validation walks the messages without copying them.
        let (result, validate_bytes) = allocated(|| ast.validate());
        result.expect("valid");
        assert!(
            validate_bytes < copy_bytes / 100,
            "validation allocated {validate_bytes} B"
        );

        // Flattening is exactly one copy.
        let (messages, flatten_bytes) = allocated(|| ast.messages());
        assert_eq!(flatten_bytes, copy_bytes);
        assert_eq!(messages, chain);
    }
}

#[test]
fn construction_is_linear_in_allocations() {
    let per_message = |size: usize| {
        let chain = chain(size);
        let (ast, bytes) = allocated(|| ChainAst::new(&chain, false));
        assert!(ast.is_ok());
        bytes as f64 / chain.len() as f64
    };
    let (small, large) = (per_message(10_000), per_message(100_000));
    assert!(
        large < small * 1.2,
        "bytes per message grew from {small:.1} to {large:.1}"
    );
}
