//! The `pulsar` crate's errors, read for what they mean.

/// A failed publish as one short sentence. The client reports a broker's
/// refusal of a message (`SEND_ERROR`) as the whole protocol command in
/// `Debug` form; this keeps the error code and the broker's message.
pub(crate) fn describe_send_error(error: &pulsar::Error) -> String {
    let text = error.to_string();
    if let Some(refusal) = text.split_once("CommandSendError {").map(|(_, rest)| rest) {
        let code = refusal
            .split_once("error: ")
            .and_then(|(_, rest)| rest.split([',', ' ']).next());
        let message = refusal
            .split_once("message: \"")
            .and_then(|(_, rest)| rest.split('"').next());
        if let (Some(code), Some(message)) = (code, message) {
            return format!("the broker refused it ({code}: {message})");
        }
    }
    const KEEP: usize = 300;
    match text.char_indices().nth(KEEP) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

/// Whether the broker refused the message (a `CommandSendError`: too
/// large for a topic policy, not allowed), rather than the connection
/// failing on the way.
pub(crate) fn is_refusal(error: &pulsar::Error) -> bool {
    error.to_string().contains("CommandSendError {")
}

/// Whether an error from a consumer's stream means the consumer is gone
/// (the client could not re-create it, and nothing more will come), rather
/// than one message it could not decode (a bad batch count, an unknown
/// compression: the consumer goes on).
pub(crate) fn consumer_lost(error: &pulsar::Error) -> bool {
    use pulsar::error::{ConnectionError, ConsumerError};
    !matches!(
        error,
        pulsar::Error::Connection(ConnectionError::Decoding(_))
            | pulsar::Error::Consumer(
                ConsumerError::Io(_)
                    | ConsumerError::MissingPayload(_)
                    | ConsumerError::Connection(ConnectionError::Decoding(_))
            )
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_message_is_described_by_its_code_and_the_brokers_words() {
        use pulsar::error::{ConnectionError, ProducerError};
        use pulsar::proto::{base_command::Type, BaseCommand, CommandSendError, ServerError};
        // As the client (the version in Cargo.lock) reports a SEND_ERROR.
        let command = BaseCommand {
            r#type: Type::SendError as i32,
            send_error: Some(CommandSendError {
                producer_id: 1,
                sequence_id: 0,
                error: ServerError::NotAllowedError as i32,
                message: String::from("Exceed maximum message size"),
            }),
            ..BaseCommand::default()
        };
        let error = pulsar::Error::Producer(ProducerError::Connection(
            ConnectionError::UnexpectedResponse(format!("{command:?}")),
        ));
        assert_eq!(
            describe_send_error(&error),
            "the broker refused it (NotAllowedError: Exceed maximum message size)"
        );
        let other = pulsar::Error::Custom("x".repeat(1000));
        assert_eq!(describe_send_error(&other).chars().count(), 301);
        let short = pulsar::Error::Custom(String::from("timed out"));
        assert_eq!(describe_send_error(&short), "error: timed out");
    }

    #[test]
    fn undecodable_messages_do_not_count_as_a_lost_consumer() {
        use pulsar::error::{ConnectionError, ConsumerError};
        let bad_batch = pulsar::Error::Connection(ConnectionError::Decoding(String::from(
            "Error decoding batched messages",
        )));
        assert!(!consumer_lost(&bad_batch));
        let bad_compression = pulsar::Error::Consumer(ConsumerError::Io(std::io::Error::other(
            "unknown compression type 9",
        )));
        assert!(!consumer_lost(&bad_compression));
        let gone = pulsar::Error::Connection(ConnectionError::PulsarError(
            Some(pulsar::proto::ServerError::TopicNotFound),
            Some(String::from("Topic does not exist")),
        ));
        assert!(consumer_lost(&gone));
        assert!(consumer_lost(&pulsar::Error::Consumer(
            ConsumerError::Closed
        )));
    }
}
