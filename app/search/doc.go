// Package search finds messages by their words: the query language (words, a prefix on the
// last word, phrases, exclusions and filters by author, channel, attachment and time), the use
// case that answers one page of results with an excerpt of each, and the port of the index it
// reads. It owns no table: storage keeps the index in each message's own Unit of Work (see
// docs/architecture.md, "Search"), so an edited or deleted message is never found by its old text.
//
// Only channels the caller may read are searched, and the filter is part of the index query
// itself, so a page, its length and its cursor never depend on a message the caller may not see.
package search
