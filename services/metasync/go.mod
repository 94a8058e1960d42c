module github.com/rmqha/rmqha/services/metasync

go 1.26
