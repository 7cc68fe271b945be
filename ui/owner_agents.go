package ui

func (c *Console) agentRoutes() {}
