package ui

func (c *Console) tokenRoutes() {}
