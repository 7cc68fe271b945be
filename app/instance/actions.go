package instance

import "bothy.dev/bothy/app/kernel"

// Actions on the instance itself.
const (
	// ActDiscoveryRead is reading the API description and the setup page: anyone.
	ActDiscoveryRead kernel.Action = "instance.discovery.read"
	// ActInstanceRead is reading the instance's settings (its name): any principal.
	ActInstanceRead kernel.Action = "instance.read"
	// ActInstanceUpdate is changing the instance's settings: owners only.
	ActInstanceUpdate kernel.Action = "instance.update"
)
