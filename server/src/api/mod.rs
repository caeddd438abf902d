//! The HTTP layer: how the service is reached (router, routes, auth, limits, schemas) and how
//! its events are written (one encoder per protocol).

pub mod encode;
