//! The service layer: what a run needs, whatever protocol asked for it. A [`RunSpec`](crate::RunSpec)
//! becomes a running agent with its model (`model`, `keys`),
//! tools (`tools`), stored history (`store`, `owner`) and cancellation (`runs`) through
//! [`ChatService`](crate::ChatService) (`chat`). Nothing here knows HTTP.

pub(crate) mod chat;
pub(crate) mod gateway;
pub mod keys;
pub mod mcp;
pub(crate) mod model;
pub(crate) mod owner;
pub(crate) mod runs;
pub mod skills;
pub(crate) mod spec;
pub mod store;
