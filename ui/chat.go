package ui

// chatRoutes registers the chat view's pages.
func (c *Console) chatRoutes() {}
