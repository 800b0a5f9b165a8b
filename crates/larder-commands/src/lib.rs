//! larder-commands (work in progress)
