export default function ResumePage() {
  return (
    <section className="page">
      <h1>Resume</h1>
    </section>
  );
}
