//! larder-cache (work in progress)
