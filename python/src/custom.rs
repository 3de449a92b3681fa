//! Custom jobs (map_reduce): later.
