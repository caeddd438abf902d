//! Model Context Protocol servers as Skein tools (work in progress: the client lands here).
