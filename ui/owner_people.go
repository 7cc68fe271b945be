package ui

func (c *Console) peopleRoutes() {}
