//! mongodns server library.
