"""The views: each takes the Session (and the Workers where it runs slow jobs) and only renders."""
