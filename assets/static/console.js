// bothy console: the live parts of the pages. Every page works without it.
"use strict";
