module workflow-manager/examples/word-counts/go

go 1.19

require (
	github.com/lib/pq v1.10.7
	github.com/rabbitmq/amqp091-go v1.5.0
	golang.org/x/text v0.7.0
	workflow-manager/goworker v0.0.0
)

// Everything is built offline: the worker library from this repository, the rest from
// Debian's packaged sources (golang-github-rabbitmq-amqp091-go-dev, golang-golang-x-text-dev,
// golang-github-lib-pq-dev: goworker's PostgreSQL payload store).
replace (
	github.com/lib/pq => /usr/share/gocode/src/github.com/lib/pq
	github.com/rabbitmq/amqp091-go => /usr/share/gocode/src/github.com/rabbitmq/amqp091-go
	golang.org/x/text => /usr/share/gocode/src/golang.org/x/text
	workflow-manager/goworker => ../../../goworker
)
