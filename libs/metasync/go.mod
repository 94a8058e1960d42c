module github.com/rmqha/rmqha/libs/metasync

go 1.26
