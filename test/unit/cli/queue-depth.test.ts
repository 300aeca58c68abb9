import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isAwsQueue, oldestAgeNote, parseRedrivePolicy, queueName } from '../../../src/cli/queue-depth.ts';

test('queue names and AWS queue URLs are recognised', () => {
  assert.equal(queueName('https://sqs.eu-west-1.amazonaws.com/123456789012/operless-dev/'), 'operless-dev');
  assert.equal(isAwsQueue('https://sqs.eu-west-1.amazonaws.com/123456789012/q'), true);
  assert.equal(isAwsQueue('https://sqs.cn-north-1.amazonaws.com.cn/123456789012/q'), true);
  assert.equal(isAwsQueue('https://eu-west-1.queue.amazonaws.com/123456789012/q'), true);
  assert.equal(isAwsQueue('http://127.0.0.1:9324/000000000000/q'), false);
  assert.equal(isAwsQueue('http://sqs.eu-west-1.amazonaws.com.evil.example/123/q'), false);
});

test('the oldest message age is n/a on local brokers and points at CloudWatch on AWS', () => {
  assert.match(oldestAgeNote('http://127.0.0.1:9324/000000000000/q', 'us-east-1'), /^n\/a for this broker/);
  assert.equal(oldestAgeNote('http://127.0.0.1:9324/000000000000/q', 'us-east-1', 17), '17s', 'a broker that answers it (the embedded queue): the seconds');
  const aws = oldestAgeNote('https://sqs.eu-west-1.amazonaws.com/123456789012/work', 'eu-west-1');
  assert.match(aws, /ApproximateAgeOfOldestMessage/);
  assert.match(aws, /Name=QueueName,Value=work/);
  assert.match(aws, /--region eu-west-1/);
});

test('redrive policies parse, and anything unreadable is treated as none', () => {
  assert.deepEqual(parseRedrivePolicy('{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:0:dlq","maxReceiveCount":"5"}'), {
    deadLetterTargetArn: 'arn:aws:sqs:us-east-1:0:dlq',
    maxReceiveCount: 5,
  });
  assert.equal(parseRedrivePolicy(undefined), undefined);
  assert.equal(parseRedrivePolicy('not json'), undefined);
  assert.equal(parseRedrivePolicy('{"maxReceiveCount":5}'), undefined);
});
