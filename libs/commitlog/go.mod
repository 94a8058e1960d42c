module github.com/rmqha/rmqha/libs/commitlog

go 1.26
