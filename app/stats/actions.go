package stats

import "bothy.dev/bothy/app/kernel"

// ActStatsRead is reading the instance's counts and activity (the console's overview).
const ActStatsRead kernel.Action = "instance.stats.read"
