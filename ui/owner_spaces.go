package ui

func (c *Console) spaceRoutes() {}
