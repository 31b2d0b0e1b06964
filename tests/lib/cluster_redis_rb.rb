#!/usr/bin/ruby
# frozen_string_literal: true

# cluster_redis_rb.rb — one run of redis-rb's cluster client (Debian's
# ruby-redis 4.8) against a cluster seeded with ONE node, driven by
# tests/integration/cluster_ruby.t. It prints one "name value" line per
# check; the driver compares them with what it expects and with the same
# script's lines against a real Redis Cluster, so nothing printed here
# may name a port, a node id or anything else that differs between runs.
#
# usage: cluster_redis_rb.rb <host:port> <keys>

require 'redis'

seed = ARGV.fetch(0)
keys = Integer(ARGV.fetch(1, '10000'))
$stdout.sync = true

def report(name, value)
  puts "#{name} #{value}"
end

# A check that raises reports the exception as its value: the driver
# sees which step failed and how, and the later steps still run.
def step(name)
  report(name, yield)
rescue StandardError => e
  report(name, "raised #{e.class}: #{e.message.lines.first.to_s.strip}")
end

redis = Redis.new(cluster: ["redis://#{seed}"], timeout: 30)

# the primaries it learned from the one seed (a replica is left out: no
# replica: true)
step('nodes') { redis._client.connection_info.map { |c| c[:port] }.uniq.size }

step('set_ok') do
  (0...keys).count { |i| redis.set("key:#{i}", "v#{i}") == 'OK' }
end
step('get_ok') do
  (0...keys).count { |i| redis.get("key:#{i}") == "v#{i}" }
end

# 100 hash tags, five keys each: one slot per tag, so MSET/MGET are legal
step('mset_ok') do
  (0...100).count do |g|
    redis.mset(*(0...5).flat_map { |j| ["{tag#{g}}k#{j}", "#{g}.#{j}"] }) == 'OK'
  end
end
step('mget_ok') do
  (0...100).count do |g|
    redis.mget(*(0...5).map { |j| "{tag#{g}}k#{j}" }) == (0...5).map { |j| "#{g}.#{j}" }
  end
end

# across slots the server refuses; redis-rb passes its error on
step('mset_crossslot') do
  redis.mset('{a}x', '1', '{b}y', '2')
  'no error'
rescue Redis::CommandError => e
  "#{e.class}: #{e.message}"
end
step('mset_crossslot_wrote') { [redis.exists('{a}x'), redis.exists('{b}y')].join(',') }
step('mget_crossslot') do
  redis.mget('{tag0}k0', '{tag1}k0')
  'no error'
rescue Redis::CommandError => e
  "#{e.class}: #{e.message}"
end

step('incr') do
  100.times { redis.incr('counter') }
  redis.incrby('counter', 23)
end
step('incr_wrongtype') do
  redis.incr('key:0')
  'no error'
rescue Redis::CommandError => e
  "#{e.class}: #{e.message}"
end

step('pipeline') do
  replies = redis.pipelined do |p|
    (0...100).each { |i| p.set("{pipe}#{i}", i.to_s) }
    p.incr('{pipe}n')
    p.get('{pipe}42')
  end
  "#{replies.count('OK')} #{replies[-2]} #{replies[-1]}"
end

step('multi') do
  redis.multi do |tx|
    tx.set('{tx}a', '1')
    tx.incr('{tx}n')
    tx.incr('{tx}n')
    tx.get('{tx}a')
  end.inspect
end

# a pipeline across slots is refused by redis-rb itself before sending
step('pipeline_crossslot') do
  redis.pipelined do |p|
    p.set('{a}p', '1')
    p.set('{b}p', '1')
  end
  'no error'
rescue Redis::Cluster::CrossSlotPipeliningError => e
  e.class.to_s
end

step('del') { redis.del('{tx}a') + redis.del('nokey') }
step('dbsize') { redis.dbsize }
step('done') { 'yes' }
