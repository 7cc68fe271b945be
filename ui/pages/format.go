package pages

import "strconv"

func statusText(status int) string { return strconv.Itoa(status) }
