//! Conversation owners (schema version 4): claims, and what writes do to them.

use conversation_tree::{Claim, ConversationId, Message, StoreError};

use super::{Harness, deterministic, step};

pub(crate) async fn claims_record_the_first_owner_and_writes_keep_it(harness: &impl Harness) {
    let store = harness.open().await;
    let conversation = ConversationId::random();
    assert_eq!(
        store
            .claim_conversation(&conversation, "alice")
            .await
            .unwrap(),
        Claim::Created
    );
    assert_eq!(
        store
            .claim_conversation(&conversation, "alice")
            .await
            .unwrap(),
        Claim::Owned
    );
    assert_eq!(
        store
            .claim_conversation(&conversation, "bob")
            .await
            .unwrap(),
        Claim::OtherOwner
    );
    // A claimed conversation is listed, empty and without a name until its first answer.
    let summary = store.conversation(&conversation).await.unwrap().unwrap();
    assert_eq!((summary.responses, summary.name), (0, None));
    // Logging into the claimed conversation keeps its owner, and names it.
    step(
        &*store,
        &conversation,
        &[Message::human("secret plan")],
        Message::ai("noted"),
        &deterministic(),
    )
    .await;
    assert_eq!(
        store
            .claim_conversation(&conversation, "bob")
            .await
            .unwrap(),
        Claim::OtherOwner
    );
    let summary = store.conversation(&conversation).await.unwrap().unwrap();
    assert_eq!(summary.responses, 1);
    assert_eq!(summary.name.as_deref(), Some("secret plan"));
    assert!(
        store
            .claim_conversation(&conversation, "alice")
            .await
            .unwrap()
            .is_own()
    );
    // A conversation written without a claim (the CLI) has no owner, and claims do not take it.
    let unclaimed = ConversationId::random();
    step(
        &*store,
        &unclaimed,
        &[Message::human("hi")],
        Message::ai("hello"),
        &deterministic(),
    )
    .await;
    assert_eq!(
        store.claim_conversation(&unclaimed, "bob").await.unwrap(),
        Claim::Unowned
    );
    assert_eq!(
        store.claim_conversation(&unclaimed, "alice").await.unwrap(),
        Claim::Unowned
    );
    // Owners survive a reopen.
    drop(store);
    let store = harness.open().await;
    assert_eq!(
        store
            .claim_conversation(&conversation, "alice")
            .await
            .unwrap(),
        Claim::Owned
    );
    assert_eq!(
        store
            .claim_conversation(&conversation, "bob")
            .await
            .unwrap(),
        Claim::OtherOwner
    );
    // Unusable owner names are typed errors that do not repeat the name.
    for bad in ["", "a\nb", &"x".repeat(129)] {
        let err = store
            .claim_conversation(&conversation, bad)
            .await
            .unwrap_err();
        assert!(matches!(err, StoreError::InvalidOwner { .. }), "{err}");
        if !bad.is_empty() {
            assert!(!err.to_string().contains(bad));
        }
    }
}

pub(crate) async fn concurrent_claims_of_a_new_id_have_one_winner(harness: &impl Harness) {
    let store = harness.open().await;
    let conversation = ConversationId::random();
    let claims = futures::future::join_all((0..8).map(|i| {
        let store = std::sync::Arc::clone(&store);
        let conversation = conversation.clone();
        async move {
            store
                .claim_conversation(&conversation, &format!("owner-{i}"))
                .await
                .unwrap()
        }
    }))
    .await;
    assert_eq!(
        claims
            .iter()
            .filter(|claim| **claim == Claim::Created)
            .count(),
        1,
        "{claims:?}"
    );
    assert_eq!(
        claims
            .iter()
            .filter(|claim| **claim == Claim::OtherOwner)
            .count(),
        7
    );
}
