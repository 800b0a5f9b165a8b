//! larder-engine (work in progress)
