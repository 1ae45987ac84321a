module github.com/rollgym/strutil

go 1.19
