use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use messages::ToolSpec;
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::{DynTool, Tool, ToolError};

/// The tools offered to a model, by name, in registration order.
///
/// Cloning is cheap (the tools are shared), so an agent can keep a base set and offer a
/// different one each round ([`filtered`](ToolSet::filtered), [`extend`](ToolSet::extend)):
/// adding to a clone copies the list of `Arc`s, never the tools.
///
/// ```
/// use toolchain::{async_trait, ExecutionContext, JsonSchema, Tool, ToolError, ToolResult, ToolSet};
/// use serde::Deserialize;
///
/// #[derive(Deserialize, JsonSchema)]
/// struct Empty {}
///
/// struct Ping;
///
/// #[async_trait]
/// impl Tool<Empty, String> for Ping {
///     fn name(&self) -> &str { "ping" }
///     fn description(&self) -> &str { "Answers pong." }
///     async fn call(&self, _: &ExecutionContext, _: Empty) -> Result<ToolResult<String>, ToolError> {
///         Ok(ToolResult::text("pong".to_owned()))
///     }
/// }
///
/// let mut tools = ToolSet::new();
/// tools.add(Ping)?;
/// assert!(matches!(tools.add(Ping), Err(ToolError::DuplicateTool { .. })));
/// assert_eq!(tools.names().collect::<Vec<_>>(), ["ping"]);
/// assert_eq!(tools.specs()[0].parameters["type"], "object");
/// # Ok::<(), ToolError>(())
/// ```
#[derive(Clone, Default)]
pub struct ToolSet {
    inner: Arc<Inner>,
}

#[derive(Clone, Default)]
struct Inner {
    tools: Vec<DynTool>,
    index: HashMap<String, usize>,
}

impl ToolSet {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a typed tool. Fails on a duplicate name or a tool that cannot be offered (see
    /// [`DynTool::new`]).
    pub fn add<T, I, O>(&mut self, tool: T) -> Result<(), ToolError>
    where
        T: Tool<I, O> + 'static,
        I: DeserializeOwned + JsonSchema + Send + 'static,
        O: Serialize + Send + 'static,
    {
        self.add_dyn(DynTool::new(tool)?)
    }

    /// Adds a typed tool and returns the set, for building in one expression.
    pub fn with<T, I, O>(mut self, tool: T) -> Result<Self, ToolError>
    where
        T: Tool<I, O> + 'static,
        I: DeserializeOwned + JsonSchema + Send + 'static,
        O: Serialize + Send + 'static,
    {
        self.add(tool)?;
        Ok(self)
    }

    /// Adds an erased tool. Fails on a duplicate name.
    pub fn add_dyn(&mut self, tool: DynTool) -> Result<(), ToolError> {
        if self.contains(tool.name()) {
            return Err(ToolError::DuplicateTool {
                name: tool.name().to_owned(),
            });
        }
        let inner = Arc::make_mut(&mut self.inner);
        inner
            .index
            .insert(tool.name().to_owned(), inner.tools.len());
        inner.tools.push(tool);
        Ok(())
    }

    /// Adds every tool of `other`; fails, adding nothing, if any name is already here.
    pub fn extend(&mut self, other: &ToolSet) -> Result<(), ToolError> {
        if let Some(tool) = other.iter().find(|tool| self.contains(tool.name())) {
            return Err(ToolError::DuplicateTool {
                name: tool.name().to_owned(),
            });
        }
        for tool in other.iter() {
            self.add_dyn(tool.clone())?;
        }
        Ok(())
    }

    /// The tools for which `keep` is true, in the same order.
    pub fn filtered(&self, mut keep: impl FnMut(&DynTool) -> bool) -> ToolSet {
        let mut set = ToolSet::new();
        for tool in self.iter().filter(|tool| keep(tool)) {
            // Names are unique here already, so this cannot fail.
            let _ = set.add_dyn(tool.clone());
        }
        set
    }

    /// The tool named `name` (exact match).
    pub fn get(&self, name: &str) -> Option<&DynTool> {
        self.inner.index.get(name).map(|&i| &self.inner.tools[i])
    }

    /// The name for people of the tool the model called `name`: the tool's own
    /// [`display_name`](DynTool::display_name), or, for a name the set lacks (the model called
    /// a tool it was not offered), one derived from the name.
    pub fn display_name(&self, name: &str) -> String {
        match self.get(name) {
            Some(tool) => tool.display_name().into_owned(),
            None => crate::display_name_of(name),
        }
    }

    /// Whether a tool named `name` is in the set.
    pub fn contains(&self, name: &str) -> bool {
        self.inner.index.contains_key(name)
    }

    /// The tools, in registration order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &DynTool> {
        self.inner.tools.iter()
    }

    /// The tool names, in registration order.
    pub fn names(&self) -> impl ExactSizeIterator<Item = &str> {
        self.iter().map(DynTool::name)
    }

    /// How many tools there are.
    pub fn len(&self) -> usize {
        self.inner.tools.len()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.inner.tools.is_empty()
    }

    /// Every tool's spec, for native function calling.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.iter().map(|tool| tool.spec().clone()).collect()
    }
}

impl fmt::Debug for ToolSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

impl<'a> IntoIterator for &'a ToolSet {
    type Item = &'a DynTool;
    type IntoIter = std::slice::Iter<'a, DynTool>;

    fn into_iter(self) -> Self::IntoIter {
        self.inner.tools.iter()
    }
}
