package ui

func (c *Console) settingsRoutes() {}
