//! Query plans, which need the store's statements.

use super::PostgresStore;
use super::tx::{CHILD_CANDIDATES_SQL, ROOT_CANDIDATES_SQL};

/// With data where prompts repeat across conversations, as a shared system prompt makes them
/// (20,000 responses, 500 conversations, 20 distinct prompts, analysed), the walk's lookups for
/// a root and for a child are scans of the composite index on all three columns.
#[tokio::test]
async fn walk_lookups_use_the_composite_index() -> crate::Result<()> {
    let url = crate::testing::fresh_postgres_database().await;
    let store = PostgresStore::connect(&url).await?;
    let client = store.client("test").await?;
    let fill = "
        INSERT INTO conversations (id, created_utc, updated_utc)
            SELECT 'c' || g, now(), now() FROM generate_series(0, 499) g;
        INSERT INTO responses (conversation_id, parent_response_id, prompt_hash, response_hash,
                               path_hash, input_json, response_json, model, datetime_utc)
            SELECT 'c' || (g % 500), NULL, md5((g % 20)::text), md5(g::text), md5(g::text), '[]', '[]',
                   'm', now()
            FROM generate_series(1, 20000) g;
        UPDATE responses SET parent_response_id = id - 500 WHERE id > 500;
        ANALYZE;";
    client
        .batch_execute(fill)
        .await
        .map_err(super::pg("test"))?;
    let explain = |sql: &str| format!("EXPLAIN {sql}");
    let conversation = "c7";
    let prompt = "c4ca4238a0b923820dcc509a6f75849b"; // md5('1'): one of the 20
    let rows = client
        .query(&explain(ROOT_CANDIDATES_SQL), &[&conversation, &prompt])
        .await
        .map_err(super::pg("test"))?;
    let root_plan: Vec<String> = rows.iter().map(|row| row.get(0)).collect();
    let rows = client
        .query(
            &explain(CHILD_CANDIDATES_SQL),
            &[&conversation, &7_i64, &prompt],
        )
        .await
        .map_err(super::pg("test"))?;
    let child_plan: Vec<String> = rows.iter().map(|row| row.get(0)).collect();
    for (plan, parent) in [
        (root_plan, "(parent_response_id IS NULL)"),
        (child_plan, "(parent_response_id = '7'::bigint)"),
    ] {
        let text = plan.join("\n");
        assert!(
            text.contains("Index Scan using idx_responses_conversation_parent_prompt"),
            "{text}"
        );
        // All three columns are index conditions, none is a filter.
        let condition = plan
            .iter()
            .find(|line| line.contains("Index Cond:"))
            .unwrap_or_else(|| panic!("no index condition: {text}"));
        for column in ["(conversation_id = 'c7'::text)", parent, "(prompt_hash = "] {
            assert!(condition.contains(column), "{column} in {text}");
        }
        assert!(
            !text.contains("Filter:") && !text.contains("Seq Scan"),
            "{text}"
        );
    }
    Ok(())
}
