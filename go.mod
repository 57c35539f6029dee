module github.com/llmfleet/analyzer

go 1.26
