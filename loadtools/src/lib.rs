//! mongodns load tools: the zone-file parser and the importer.
#![warn(missing_docs)]
