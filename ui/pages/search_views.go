package pages

import "bothy.dev/bothy/ui/layouts"

// SearchView is the search page: the query, and once there is one, a page of its results.
type SearchView struct {
	Chrome layouts.Chrome
	// Query is the text searched for; "" shows the box and the hint of the syntax alone.
	Query, Title string
	// Error is why the search was refused (a query the syntax does not allow, or too long).
	Error string
	// Searched is set once a search ran: no Results then says that nothing matched.
	Searched bool
	Results  []SearchResult
	// NextHref leads to the page after this one; "" on the last. Paged marks a page after the
	// first, which FirstHref leads back to.
	NextHref  string
	Paged     bool
	FirstHref string
}

// SearchResult is one matching message: where it is, who wrote it and when, and its
// excerpt. Highlight is HTML that holds only escaped text and <mark> around the matches
// (the handler makes it so); Href opens the message in its thread, marked.
type SearchResult struct {
	ID, Href                 string
	Channel, ChannelHref     string
	Thread, ThreadHref       string
	AuthorName, AuthorHandle string
	AuthorAgent              bool
	Time, Stamp, FullTime    string
	Highlight                string
	Files                    int
}
