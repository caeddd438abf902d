//! Knowledge bases searched by full text (work in progress: the stores land here).
